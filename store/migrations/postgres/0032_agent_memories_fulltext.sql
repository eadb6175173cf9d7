-- Full-text recall of agents' memories (issue 25 item 6). On PostgreSQL the GIN index over
-- to_tsvector('simple', terms) came with the table (0026), so this version only keeps the
-- three dialects' migration sets alike.
SELECT 1;
