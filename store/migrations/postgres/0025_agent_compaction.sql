-- An agent's compaction settings (issue 25 item 5): compaction on or off, the threshold (percent
-- of the usable window), the answer's reserve in tokens (0: the model configuration's
-- max_tokens_output, else 1,024), the agent-level budget of one tool result sent to the model
-- in characters (0: none), and the model configuration that writes summaries (NULL: the one
-- the agent runs with; a deleted configuration falls back to it).
ALTER TABLE agents
    ADD COLUMN compaction_enabled           BOOLEAN NOT NULL DEFAULT TRUE,
    ADD COLUMN compaction_threshold_percent INT     NOT NULL DEFAULT 80,
    ADD COLUMN compaction_answer_reserve    INT     NOT NULL DEFAULT 0,
    ADD COLUMN tool_result_max_chars        INT     NOT NULL DEFAULT 0,
    ADD COLUMN summary_llm_config_id        BIGINT  NULL,
    ADD CONSTRAINT agents_summary_llm_config_fk FOREIGN KEY (summary_llm_config_id) REFERENCES llm_configs (id) ON DELETE SET NULL;
