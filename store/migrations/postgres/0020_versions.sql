-- Numbers that change whenever what a process caches changes (issue 14), bumped by the store in
-- the transaction of each such write (store/versions.go), read by every process at most once a
-- second:
--   config: the configuration a task step reads (the agent, its tools, operations and settings,
--           its group's tools and model configurations, the owner's principal): agentloop caches
--           it per agent;
--   auth:   sessions ended, users and their roles changed: the store caches sessions with their
--           user for the request path.
CREATE TABLE versions (
    name    VARCHAR(32) NOT NULL PRIMARY KEY,
    version BIGINT      NOT NULL
);
INSERT INTO versions (name, version) VALUES ('config', 1), ('auth', 1);
