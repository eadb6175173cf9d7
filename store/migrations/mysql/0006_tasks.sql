-- Tasks: a chat run of an agent, its conversation, its tool calls and its question batches.
-- user_id is the owner (only the owner sees a task); principal_id is the agent's principal
-- when the task started (kept as a plain value: the agent may move later). Deleting an agent,
-- the owner or a parent task removes the task with everything that belongs to it.
-- Status changes are compare-and-swap updates on status; lease_owner/lease_expires_at say
-- which worker holds a RUNNING task and until when. Keys and JSON compare byte for byte
-- (utf8mb4_bin), as on SQLite.

CREATE TABLE tasks (
    id               BIGINT       NOT NULL AUTO_INCREMENT,
    agent_id         BIGINT       NOT NULL,
    principal_id     BIGINT       NOT NULL,
    user_id          BIGINT       NOT NULL,
    parent_task_id   BIGINT       NULL,
    status           VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    prompt           MEDIUMTEXT   NOT NULL,
    answer           MEDIUMTEXT   NULL,
    error_code       VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NULL,
    error_message    TEXT         NULL,
    max_steps        INT          NOT NULL,
    steps_used       INT          NOT NULL DEFAULT 0,
    retry_count      INT          NOT NULL DEFAULT 0,
    next_retry_at    DATETIME(6)  NULL,
    input_tokens     BIGINT       NOT NULL DEFAULT 0,
    output_tokens    BIGINT       NOT NULL DEFAULT 0,
    data             MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT ('{}'),
    source           VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    lease_owner      VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    lease_expires_at DATETIME(6)  NULL,
    created_at       DATETIME(6)  NOT NULL,
    updated_at       DATETIME(6)  NOT NULL,
    finished_at      DATETIME(6)  NULL,
    PRIMARY KEY (id),
    KEY tasks_status_lease_idx (status, lease_expires_at),
    KEY tasks_status_retry_idx (status, next_retry_at),
    KEY tasks_user_updated_idx (user_id, updated_at),
    KEY tasks_user_created_idx (user_id, created_at, id),
    KEY tasks_parent_idx (parent_task_id),
    KEY tasks_agent_idx (agent_id),
    CONSTRAINT tasks_max_steps_check CHECK (max_steps >= 1),
    CONSTRAINT tasks_steps_used_check CHECK (steps_used >= 0),
    CONSTRAINT tasks_retry_count_check CHECK (retry_count >= 0),
    CONSTRAINT tasks_source_check CHECK (source IN ('session', 'agent_api')),
    CONSTRAINT tasks_agent_id_fk FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE,
    CONSTRAINT tasks_user_id_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
    CONSTRAINT tasks_parent_task_id_fk FOREIGN KEY (parent_task_id) REFERENCES tasks (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE task_messages (
    id               BIGINT       NOT NULL AUTO_INCREMENT,
    task_id          BIGINT       NOT NULL,
    sequence         INT          NOT NULL,
    role             VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    text             MEDIUMTEXT   NOT NULL DEFAULT (''),
    reasoning        MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    tool_calls       MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    provider_call_id VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    media_ids        TEXT         CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    input_tokens     BIGINT       NOT NULL DEFAULT 0,
    output_tokens    BIGINT       NOT NULL DEFAULT 0,
    created_at       DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY task_messages_task_sequence_uq (task_id, sequence),
    CONSTRAINT task_messages_role_check CHECK (role IN ('user', 'assistant', 'tool')),
    CONSTRAINT task_messages_task_id_fk FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE task_tool_calls (
    id                 BIGINT       NOT NULL AUTO_INCREMENT,
    task_id            BIGINT       NOT NULL,
    message_sequence   INT          NOT NULL,
    provider_call_id   VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    tool_class         VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    name               VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    operation          VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
    status             VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    proposed_arguments MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT ('{}'),
    approved_arguments MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    result             MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    reason             TEXT         NULL,
    decided_by         BIGINT       NULL,
    decided_at         DATETIME(6)  NULL,
    created_at         DATETIME(6)  NOT NULL,
    executed_at        DATETIME(6)  NULL,
    PRIMARY KEY (id),
    UNIQUE KEY task_tool_calls_task_provider_uq (task_id, provider_call_id),
    KEY task_tool_calls_status_idx (task_id, status),
    CONSTRAINT task_tool_calls_status_check CHECK (status IN ('PENDING', 'PENDING_APPROVAL', 'APPROVED', 'REJECTED', 'EXECUTED', 'FAILED')),
    CONSTRAINT task_tool_calls_task_id_fk FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE task_questions (
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    task_id      BIGINT       NOT NULL,
    tool_call_id VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    questions    MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    answers      MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    created_at   DATETIME(6)  NOT NULL,
    answered_at  DATETIME(6)  NULL,
    PRIMARY KEY (id),
    UNIQUE KEY task_questions_task_call_uq (task_id, tool_call_id),
    CONSTRAINT task_questions_task_id_fk FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
