-- Agents' long-term memory (issue 25 items 6-7): what the memory tool remembered, kept past the
-- chat it came from. user_id scopes a memory to the user the task ran for (the tool's scope
-- setting agent_user); NULL is a memory of the whole agent. terms holds the text's normalised
-- words (" word word "), the column recall matches with LIKE on both dialects (the documented
-- ranking: matched query terms, then recency). task_id and message_sequence name the message
-- the memory came from; the memory outlives its task. Deleted with its agent and its user.
CREATE TABLE agent_memories (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id         INTEGER  NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    user_id          INTEGER  NULL REFERENCES users (id) ON DELETE CASCADE,
    text             TEXT     NOT NULL,
    terms            TEXT     NOT NULL,
    task_id          INTEGER  NULL REFERENCES tasks (id) ON DELETE SET NULL,
    message_sequence INTEGER  NULL,
    created_at       DATETIME NOT NULL,
    updated_at       DATETIME NOT NULL
);
CREATE INDEX agent_memories_scope_idx ON agent_memories (agent_id, user_id, id);
CREATE INDEX agent_memories_user_idx ON agent_memories (user_id);
CREATE INDEX agent_memories_task_idx ON agent_memories (task_id);
