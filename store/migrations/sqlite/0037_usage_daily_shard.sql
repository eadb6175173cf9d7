-- Usage rollup shards (issue 28): every step adds its model call to the day's rollup row in its
-- own transaction, so all the steps of one user's tasks of one agent on a day queued on that
-- row's lock, each holding it through its commit. The row is now split by shard (the task's id
-- modulo 32): tasks running side by side add to different rows; readers sum them as before.
-- SQLite cannot change a primary key: the table is rebuilt (no foreign key names it).
CREATE TABLE usage_daily_sharded (
    day                 CHAR(10) NOT NULL,
    agent_id            INTEGER  NOT NULL,
    principal_id        INTEGER  NOT NULL,
    user_id             INTEGER  NOT NULL,
    api_key_id          INTEGER  NOT NULL,
    llm_config_id       INTEGER  NOT NULL,
    model               VARCHAR(200) NOT NULL,
    shard               INTEGER  NOT NULL DEFAULT 0,
    calls               BIGINT   NOT NULL,
    input_tokens        BIGINT   NOT NULL,
    cached_input_tokens BIGINT   NOT NULL,
    output_tokens       BIGINT   NOT NULL,
    cost                BIGINT   NOT NULL,
    PRIMARY KEY (day, agent_id, principal_id, user_id, api_key_id, llm_config_id, model, shard)
);
INSERT INTO usage_daily_sharded (day, agent_id, principal_id, user_id, api_key_id, llm_config_id, model, shard,
    calls, input_tokens, cached_input_tokens, output_tokens, cost)
SELECT day, agent_id, principal_id, user_id, api_key_id, llm_config_id, model, 0,
    calls, input_tokens, cached_input_tokens, output_tokens, cost FROM usage_daily;
DROP TABLE usage_daily;
ALTER TABLE usage_daily_sharded RENAME TO usage_daily;
CREATE INDEX usage_daily_user_idx ON usage_daily (user_id, day);
CREATE INDEX usage_daily_principal_idx ON usage_daily (principal_id, day);
CREATE INDEX usage_daily_agent_idx ON usage_daily (agent_id, day);
CREATE INDEX usage_daily_key_idx ON usage_daily (api_key_id, day);
