-- Full-text recall of agents' memories (issue 25 item 6): an InnoDB FULLTEXT index over the
-- normalised terms column. Recall picks its candidates with MATCH … AGAINST in boolean mode
-- (each query word as a prefix, none required) and ranks them as before (matched query terms,
-- then recency). Without the default stop-word list, so that every word of three letters or
-- more (innodb_ft_min_token_size) is indexed; shorter query words fall back to LIKE.
SET SESSION innodb_ft_enable_stopword = OFF;
CREATE FULLTEXT INDEX agent_memories_terms_ft ON agent_memories (terms);
