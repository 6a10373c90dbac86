-- The anchor of a repository's model and test (issue 48): a run pinned
-- as a release that every pull request is also compared with, and the
-- drift budget the server flags runs by (NULL: none). One per repo, model
-- and test; pinning again replaces it. token_id is who pinned it.
CREATE TABLE anchors (
    repo      TEXT NOT NULL,
    model     TEXT NOT NULL,
    test      TEXT NOT NULL,
    run_id    TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    max_drift REAL,
    pinned_at INTEGER NOT NULL,
    token_id  INTEGER NOT NULL,
    PRIMARY KEY (repo, model, test)
);

-- Each run's change since its model's anchor, paired over the records
-- both hold, with its 95% interval, computed after upload as runs.delta
-- is; kept apart from runs so re-pinning only adds rows.
CREATE TABLE anchor_deltas (
    run_id    TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    anchor_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    delta     REAL NOT NULL,
    lo        REAL NOT NULL,
    hi        REAL NOT NULL,
    PRIMARY KEY (run_id, anchor_id)
);
