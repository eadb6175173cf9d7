-- plugin_migrations records the SQL migrations of each plugin (file <slug>_NNNN_name.sql,
-- version NNNN), so a plugin's schema version is the highest version applied for its slug.
CREATE TABLE plugin_migrations (
    slug       TEXT     NOT NULL,
    version    INTEGER  NOT NULL,
    name       TEXT     NOT NULL,
    applied_at DATETIME NOT NULL,
    PRIMARY KEY (slug, version)
);
