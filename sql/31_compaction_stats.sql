-- The compaction lag in stream_ext.view_stats (issue #16): delta rows
-- waiting, how old the oldest is, compactions counted at commit only, and
-- what a user who may not read a view sees.  make test's shared cluster
-- runs no background compactor (stream_ext.background_compaction = off),
-- so the deltas move only when this test compacts them.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
SELECT stream_ext.reset_stats();

SELECT stream_ext.create_stream('cs_s', 'k int, v int');
CREATE VIEW cs_v WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM cs_s GROUP BY k;
CREATE VIEW cs_total WITH (continuous) AS SELECT count(*) AS n FROM cs_s;

-- no compactor runs in this cluster
SHOW stream_ext.background_compaction;
SELECT count(*) FROM stream_ext.compactor_status();

-- two batches: ten groups each, appended to the delta
INSERT INTO cs_s SELECT i % 10, i FROM generate_series(1, 1000) i;
INSERT INTO cs_s SELECT i % 10, i FROM generate_series(1, 1000) i;
SELECT view, delta_rows, oldest_delta_age > '0' AS waiting, rows_compacted, compactions,
       last_compacted_at IS NULL AS never_compacted, compaction_errors, last_compaction_error
  FROM stream_ext.view_stats WHERE view IN ('cs_v'::regclass, 'cs_total'::regclass) ORDER BY 1;
SELECT stream_ext.view_delta_rows('cs_v');

-- a rolled-back compaction is not counted, and the rows wait on
BEGIN;
SELECT stream_ext.compact('cs_v');
ROLLBACK;
SELECT delta_rows, rows_compacted, compactions FROM stream_ext.view_stats WHERE view = 'cs_v'::regclass;

-- compacted: no lag left, the compaction counted
SELECT stream_ext.compact('cs_v');
SELECT view, delta_rows, oldest_delta_age IS NULL AS no_lag, rows_compacted, compactions,
       last_compacted_at IS NOT NULL AS compacted
  FROM stream_ext.view_stats WHERE view IN ('cs_v'::regclass, 'cs_total'::regclass) ORDER BY 1;
SELECT * FROM cs_v ORDER BY k;

-- a new batch: waiting again, the age measured from its commit
INSERT INTO cs_s VALUES (1, 1);
SELECT delta_rows, oldest_delta_age < '1 minute' AS recent FROM stream_ext.view_stats WHERE view = 'cs_v'::regclass;

-- a user who may not read the view sees no counts of it
CREATE ROLE cs_stranger;
SET ROLE cs_stranger;
SELECT view, groups, delta_rows, last_compaction_error FROM stream_ext.view_stats
 WHERE view = 'cs_v'::regclass;
SELECT stream_ext.view_delta_rows('cs_v');
RESET ROLE;
DROP ROLE cs_stranger;

-- not a continuous view
SELECT stream_ext.view_delta_rows('cs_s');

DROP TABLE cs_s CASCADE;
