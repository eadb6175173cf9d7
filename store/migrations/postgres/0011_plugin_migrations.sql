-- plugin_migrations records the SQL migrations of each plugin (file <slug>_NNNN_name.sql,
-- version NNNN), so a plugin's schema version is the highest version applied for its slug.
CREATE TABLE plugin_migrations (
    slug       VARCHAR(64)  NOT NULL,
    version    INT          NOT NULL,
    name       VARCHAR(255) NOT NULL,
    applied_at TIMESTAMP(6)  NOT NULL,
    PRIMARY KEY (slug, version)
);
