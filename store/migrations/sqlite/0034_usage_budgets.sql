-- Usage and budgets (issue 27). Prices of a model configuration are integer micro-units of the
-- instance's currency per million tokens (no floats for money); NULL: not priced (costs 0).
ALTER TABLE llm_configs ADD COLUMN price_input BIGINT NULL;
ALTER TABLE llm_configs ADD COLUMN price_output BIGINT NULL;
ALTER TABLE llm_configs ADD COLUMN price_cached_input BIGINT NULL;
-- The ledger: one row per model call, written in the transaction of the step (or summary) that
-- made it, with the prices in force and its cost in micro-units. No foreign keys: usage outlives
-- the task, agent, user and key it names. day is the call's calendar day in the instance's time
-- zone (time_zone) when it was written.
CREATE TABLE usage_ledger (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at          DATETIME NOT NULL,
    day                 CHAR(10) NOT NULL,
    task_id             INTEGER  NOT NULL,
    agent_id            INTEGER  NOT NULL,
    principal_id        INTEGER  NOT NULL,
    user_id             INTEGER  NOT NULL,
    api_key_id          INTEGER  NULL,
    llm_config_id       INTEGER  NULL,
    model               VARCHAR(200) NOT NULL,
    input_tokens        BIGINT   NOT NULL,
    cached_input_tokens BIGINT   NOT NULL,
    output_tokens       BIGINT   NOT NULL,
    price_input         BIGINT   NULL,
    price_output        BIGINT   NULL,
    price_cached_input  BIGINT   NULL,
    cost                BIGINT   NOT NULL
);
CREATE INDEX usage_ledger_task_idx ON usage_ledger (task_id);
CREATE INDEX usage_ledger_day_idx ON usage_ledger (day);
-- The daily rollup, upserted in the ledger row's transaction: GET /usage and the budget check
-- read it (a year is at most 366 rows per agent, user, key and model). api_key_id and
-- llm_config_id are 0 for none, so the unique key holds.
CREATE TABLE usage_daily (
    day                 CHAR(10) NOT NULL,
    agent_id            INTEGER  NOT NULL,
    principal_id        INTEGER  NOT NULL,
    user_id             INTEGER  NOT NULL,
    api_key_id          INTEGER  NOT NULL,
    llm_config_id       INTEGER  NOT NULL,
    model               VARCHAR(200) NOT NULL,
    calls               BIGINT   NOT NULL,
    input_tokens        BIGINT   NOT NULL,
    cached_input_tokens BIGINT   NOT NULL,
    output_tokens       BIGINT   NOT NULL,
    cost                BIGINT   NOT NULL,
    PRIMARY KEY (day, agent_id, principal_id, user_id, api_key_id, llm_config_id, model)
);
CREATE INDEX usage_daily_user_idx ON usage_daily (user_id, day);
CREATE INDEX usage_daily_principal_idx ON usage_daily (principal_id, day);
CREATE INDEX usage_daily_agent_idx ON usage_daily (agent_id, day);
CREATE INDEX usage_daily_key_idx ON usage_daily (api_key_id, day);
-- Budgets: a limit in tokens and/or money (micro-units) per calendar period (day, week, month
-- in the instance's time zone) on a user, a group, an agent or a per-agent key. soft_percent
-- notifies once per period (notified_period holds the start day of the period last notified).
CREATE TABLE budgets (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_kind      VARCHAR(8)  NOT NULL,
    scope_id        INTEGER     NOT NULL,
    period          VARCHAR(8)  NOT NULL,
    limit_tokens    BIGINT      NULL,
    limit_cost      BIGINT      NULL,
    soft_percent    INTEGER     NULL,
    notified_period CHAR(10)    NULL,
    created_at      DATETIME    NOT NULL,
    updated_at      DATETIME    NOT NULL,
    UNIQUE (scope_kind, scope_id, period)
);
