-- Agents' long-term memory (issue 25 items 6-7): what the memory tool remembered, kept past the
-- chat it came from. user_id scopes a memory to the user the task ran for (the tool's scope
-- setting agent_user); NULL is a memory of the whole agent. terms holds the text's normalised
-- words (" word word "), the column recall matches with LIKE on both dialects (the documented
-- ranking: matched query terms, then recency). task_id and message_sequence name the message
-- the memory came from; the memory outlives its task. Deleted with its agent and its user.
CREATE TABLE agent_memories (
    id               BIGINT      NOT NULL AUTO_INCREMENT,
    agent_id         BIGINT      NOT NULL,
    user_id          BIGINT      NULL,
    text             TEXT        NOT NULL,
    terms            TEXT        NOT NULL,
    task_id          BIGINT      NULL,
    message_sequence INT         NULL,
    created_at       DATETIME(6) NOT NULL,
    updated_at       DATETIME(6) NOT NULL,
    PRIMARY KEY (id),
    KEY agent_memories_scope_idx (agent_id, user_id, id),
    KEY agent_memories_user_idx (user_id),
    KEY agent_memories_task_idx (task_id),
    CONSTRAINT agent_memories_agent_id_fk FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE,
    CONSTRAINT agent_memories_user_id_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
    CONSTRAINT agent_memories_task_id_fk FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE SET NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
