-- Webhook deliveries (issue 52): each event the server posts, the body it
-- signed, and how its delivery went, for the token's owner to read. A row
-- is written before the first attempt and updated after each one.
CREATE TABLE webhook_deliveries (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id   TEXT NOT NULL,
    event      TEXT NOT NULL,    -- regression, audit_failed
    repo       TEXT NOT NULL,
    model      TEXT NOT NULL,
    url        TEXT NOT NULL,
    body       TEXT NOT NULL,    -- the JSON posted, as signed
    state      TEXT NOT NULL,    -- pending, delivered, failed
    attempts   INTEGER NOT NULL,
    last_code  INTEGER NOT NULL, -- the last answer's status, 0 for none
    result     TEXT NOT NULL,    -- what happened, in words
    created_at INTEGER NOT NULL, -- unix nanoseconds, UTC
    updated_at INTEGER NOT NULL
);

CREATE INDEX webhook_deliveries_repo ON webhook_deliveries (repo, id);
