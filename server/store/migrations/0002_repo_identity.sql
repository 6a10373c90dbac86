-- A model's identity is its repository plus its name (DESIGN.md): history,
-- baselines and flags are looked up by (repo, model). Every run has kept
-- the repository its token uploads for since 0001, copied from the
-- header's git.repo; key each run by its header's git.repo again here, so
-- the two cannot disagree. A run whose header names no repository keeps
-- the column as it was (the empty repository): it stays readable by id and
-- by the legacy /models/NAME routes, and is never any upload's baseline,
-- since every token names a repository.
UPDATE runs SET repo = json_extract(header, '$.git.repo')
 WHERE json_valid(header)
   AND COALESCE(json_extract(header, '$.git.repo'), '') != ''
   AND repo != json_extract(header, '$.git.repo');

DROP INDEX IF EXISTS runs_model_test_time;
DROP INDEX IF EXISTS runs_model_ref_test_time;
CREATE INDEX runs_repo_model_test_time ON runs (repo, model, test, started_at);
CREATE INDEX runs_repo_model_ref_test_time ON runs (repo, model, ref, test, started_at);
-- Which repositories have a model, for the legacy routes that name none.
CREATE INDEX runs_model_repo ON runs (model, repo);
