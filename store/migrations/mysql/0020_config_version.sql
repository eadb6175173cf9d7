-- One number that changes whenever the configuration a task step reads changes (issue 14): the
-- agent, its tools, operations and settings, its group's tools and model configurations, the
-- owner's principal. The store bumps it in the transaction of every write to those tables
-- (store/configversion.go); each process caches a step's configuration per agent and re-reads
-- it when the number moved, so a change made through any process reaches running tasks.
CREATE TABLE config_version (
    id      INT    NOT NULL PRIMARY KEY,
    version BIGINT NOT NULL
) ENGINE=InnoDB;
INSERT INTO config_version (id, version) VALUES (1, 1);
