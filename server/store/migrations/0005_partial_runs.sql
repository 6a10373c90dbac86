-- Partial runs (issue 39). partial is runfile.Coverage's label of a run
-- that stopped short of its set ("50 of 400, sequential"), '' for a whole
-- one; NULL until the store has judged it (rows stored before this
-- migration are judged in Go when the store opens, so the rule has one
-- home), and a NULL row is never a baseline. sequential is the server's
-- own replay of a sequential run's stop (compare.Sequential as JSON),
-- never the header's claim. delta is the paired change from delta_base,
-- over the records both runs hold.
ALTER TABLE runs ADD COLUMN partial TEXT;
ALTER TABLE runs ADD COLUMN sequential TEXT;
ALTER TABLE runs ADD COLUMN delta REAL;
