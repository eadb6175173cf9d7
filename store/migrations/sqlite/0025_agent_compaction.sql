-- An agent's compaction settings (issue 25 item 5): compaction on or off, the threshold (percent
-- of the usable window), the answer's reserve in tokens (0: the model configuration's
-- max_tokens_output, else 1,024), the agent-level budget of one tool result sent to the model
-- in characters (0: none), and the model configuration that writes summaries (NULL: the one
-- the agent runs with; a deleted configuration falls back to it).
ALTER TABLE agents ADD COLUMN compaction_enabled BOOLEAN NOT NULL DEFAULT 1;
ALTER TABLE agents ADD COLUMN compaction_threshold_percent INTEGER NOT NULL DEFAULT 80;
ALTER TABLE agents ADD COLUMN compaction_answer_reserve INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN tool_result_max_chars INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN summary_llm_config_id INTEGER NULL REFERENCES llm_configs (id) ON DELETE SET NULL;
