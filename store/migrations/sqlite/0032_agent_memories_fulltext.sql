-- Full-text recall of agents' memories (issue 25 item 6): an FTS4 index over the normalised
-- terms column, kept by triggers as an external-content table (the words are stored once, in
-- agent_memories). Recall picks its candidates with MATCH (each query word as a prefix, ORed)
-- and ranks them as before (matched query terms, then recency), so it reads the matching rows,
-- not the scope's. The simple tokenizer splits on ASCII punctuation and spaces and keeps
-- letters, digits and every non-ASCII character, so its tokens are exactly the terms' words.
CREATE VIRTUAL TABLE agent_memories_fts USING fts4(content="agent_memories", terms, tokenize=simple);
INSERT INTO agent_memories_fts (docid, terms) SELECT id, terms FROM agent_memories;
CREATE TRIGGER agent_memories_fts_bu BEFORE UPDATE ON agent_memories BEGIN DELETE FROM agent_memories_fts WHERE docid = old.id; END;
CREATE TRIGGER agent_memories_fts_bd BEFORE DELETE ON agent_memories BEGIN DELETE FROM agent_memories_fts WHERE docid = old.id; END;
CREATE TRIGGER agent_memories_fts_au AFTER UPDATE ON agent_memories BEGIN INSERT INTO agent_memories_fts (docid, terms) VALUES (new.id, new.terms); END;
CREATE TRIGGER agent_memories_fts_ai AFTER INSERT ON agent_memories BEGIN INSERT INTO agent_memories_fts (docid, terms) VALUES (new.id, new.terms); END;
