-- Usage rollup shards (issue 28): every step adds its model call to the day's rollup row in its
-- own transaction, so all the steps of one user's tasks of one agent on a day queued on that
-- row's lock, each holding it through its commit. The row is now split by shard (the task's id
-- modulo 32): tasks running side by side add to different rows; readers sum them as before.
ALTER TABLE usage_daily ADD COLUMN shard SMALLINT NOT NULL DEFAULT 0,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (day, agent_id, principal_id, user_id, api_key_id, llm_config_id, model, shard);
