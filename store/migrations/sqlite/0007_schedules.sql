-- Prompt templates and scheduled runs of an agent. Deleting the agent removes both; a
-- template cannot be deleted while a scheduled run uses it (the service answers 409; the key
-- cascades only so deleting the agent never trips over key order). last_task_id is a plain
-- value. created_by owns the tasks automatic dispatches start.
-- Claims are compare-and-swap updates on next_run_at.

CREATE TABLE prompt_templates (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id    INTEGER  NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    name        TEXT     NOT NULL,
    description TEXT     NOT NULL DEFAULT '',
    template    TEXT     NOT NULL,
    variables   TEXT     NOT NULL DEFAULT '[]',
    max_steps   INTEGER  CHECK (max_steps >= 1),
    is_active   INTEGER  NOT NULL DEFAULT 1,
    created_at  DATETIME NOT NULL,
    updated_at  DATETIME NOT NULL
);
CREATE UNIQUE INDEX prompt_templates_agent_name_idx ON prompt_templates (agent_id, name);

CREATE TABLE scheduled_runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id           INTEGER  NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    name               TEXT     NOT NULL,
    template_id        INTEGER  REFERENCES prompt_templates (id) ON DELETE CASCADE,
    prompt             TEXT,
    variables          TEXT     NOT NULL DEFAULT '{}',
    cron_expression    TEXT,
    run_at             DATETIME,
    timezone           TEXT     NOT NULL DEFAULT 'UTC',
    max_steps_override INTEGER  CHECK (max_steps_override >= 1),
    is_active          INTEGER  NOT NULL DEFAULT 1,
    last_run_at        DATETIME,
    next_run_at        DATETIME,
    last_task_id       INTEGER ,
    created_by         INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at         DATETIME NOT NULL,
    updated_at         DATETIME NOT NULL
);
CREATE INDEX scheduled_runs_agent_idx ON scheduled_runs (agent_id);
CREATE INDEX scheduled_runs_template_idx ON scheduled_runs (template_id);
CREATE INDEX scheduled_runs_due_idx ON scheduled_runs (is_active, next_run_at);
