-- Prompt templates and scheduled runs of an agent. Deleting the agent removes both; a
-- template cannot be deleted while a scheduled run uses it (the service answers 409; the key
-- cascades only so deleting the agent never trips over key order). last_task_id is a plain
-- value. created_by owns the tasks automatic dispatches start.
-- Claims are compare-and-swap updates on next_run_at. Names compare byte for byte
-- (utf8mb4_bin), as on SQLite.

CREATE TABLE prompt_templates (
    id          BIGINT        NOT NULL AUTO_INCREMENT,
    agent_id    BIGINT        NOT NULL,
    name        VARCHAR(100)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    description TEXT          NOT NULL,
    template    MEDIUMTEXT    NOT NULL,
    variables   MEDIUMTEXT    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    max_steps   INT           NULL,
    is_active   BOOLEAN       NOT NULL DEFAULT TRUE,
    created_at  DATETIME(6)   NOT NULL,
    updated_at  DATETIME(6)   NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY prompt_templates_agent_name_idx (agent_id, name),
    CONSTRAINT prompt_templates_max_steps_check CHECK (max_steps >= 1),
    CONSTRAINT prompt_templates_agent_fk FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE scheduled_runs (
    id                 BIGINT        NOT NULL AUTO_INCREMENT,
    agent_id           BIGINT        NOT NULL,
    name               VARCHAR(100)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    template_id        BIGINT        NULL,
    prompt             MEDIUMTEXT    NULL,
    variables          MEDIUMTEXT    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    cron_expression    VARCHAR(200)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    run_at             DATETIME(6)   NULL,
    timezone           VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    max_steps_override INT           NULL,
    is_active          BOOLEAN       NOT NULL DEFAULT TRUE,
    last_run_at        DATETIME(6)   NULL,
    next_run_at        DATETIME(6)   NULL,
    last_task_id       BIGINT        NULL,
    created_by         BIGINT        NOT NULL,
    created_at         DATETIME(6)   NOT NULL,
    updated_at         DATETIME(6)   NOT NULL,
    PRIMARY KEY (id),
    KEY scheduled_runs_agent_idx (agent_id),
    KEY scheduled_runs_template_idx (template_id),
    KEY scheduled_runs_due_idx (is_active, next_run_at),
    CONSTRAINT scheduled_runs_max_steps_check CHECK (max_steps_override >= 1),
    CONSTRAINT scheduled_runs_agent_fk FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE,
    CONSTRAINT scheduled_runs_template_fk FOREIGN KEY (template_id) REFERENCES prompt_templates (id) ON DELETE CASCADE,
    CONSTRAINT scheduled_runs_user_fk FOREIGN KEY (created_by) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
