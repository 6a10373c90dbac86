-- The interval of each run's change from its baseline, computed after
-- upload by the server's paired bootstrap, so the history page shows it
-- beside the change without a bootstrap per row (issue 32). Runs stored
-- before keep NULL: their pages link the comparison instead.
ALTER TABLE runs ADD COLUMN delta_base TEXT;
ALTER TABLE runs ADD COLUMN delta_lo REAL;
ALTER TABLE runs ADD COLUMN delta_hi REAL;

-- Whether a run scored the smoke sample, kept beside the header so lists
-- that show it (history, index) read no JSON (issue 32: the index page of
-- 2,000 runs spent a tenth of its time parsing headers).
ALTER TABLE runs ADD COLUMN smoke INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET smoke = 1 WHERE json_valid(header) AND json_extract(header, '$.dataset.smoke');

-- Lists sort by (started_at, id): with id in the index the newest runs
-- come straight from it, with no sort of every run of a model.
DROP INDEX IF EXISTS runs_repo_model_test_time;
DROP INDEX IF EXISTS runs_repo_model_ref_test_time;
CREATE INDEX runs_repo_model_test_time ON runs (repo, model, test, started_at, id);
CREATE INDEX runs_repo_model_ref_test_time ON runs (repo, model, ref, test, started_at, id);

-- A counter every write bumps, so caches of pages know when what they
-- show changed (runs are added, intervals filled in).
CREATE TABLE store_generation (n INTEGER NOT NULL);
INSERT INTO store_generation (n) VALUES (0);
