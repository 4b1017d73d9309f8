-- WITH (backfill, backfill_from) of continuous views (docs/continuous-views.md#backfill):
-- 'stream' (default) folds the stream's rows into the new view, with
-- backfill_from only those that arrived at or after it; 'none' starts
-- empty; 'kafka' records the hand-over offsets of the stream's source and
-- starts a replay (the replay itself: test/t/180-184).  Nonsense is refused.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA bf;
SET search_path = bf, public;

SELECT stream_ext.create_stream('bf.ev', 'k int, v int');
INSERT INTO ev (k, v, arrival_timestamp)
  SELECT g % 3, g, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 minute'
  FROM generate_series(1, 100) g;

-- 1. the default and 'stream': every row the stream holds
CREATE VIEW all_rows WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
CREATE VIEW all_rows2 WITH (continuous, backfill = 'stream') AS SELECT k, count(*) AS n FROM ev GROUP BY k;
SELECT k, n, s FROM all_rows ORDER BY k;
SELECT k, n FROM all_rows2 ORDER BY k;

-- 2. backfill_from: only rows whose arrival_timestamp >= it (given in the
--    session's time zone), count(DISTINCT) too
SET TimeZone = 'America/New_York';
CREATE VIEW recent WITH (continuous, backfill_from = '2024-01-01 00:30:00 UTC')
  AS SELECT k, count(*) AS n, count(DISTINCT v) AS d, min(v) AS first FROM ev GROUP BY k;
RESET TimeZone;
SELECT count(*) = 0 AS equals_query FROM (
  (SELECT k, n, d, first FROM recent
   EXCEPT ALL SELECT k, count(*), count(DISTINCT v), min(v) FROM ev
              WHERE arrival_timestamp >= '2024-01-01 00:30:00+00' GROUP BY k)
  UNION ALL
  (SELECT k, count(*), count(DISTINCT v), min(v) FROM ev
   WHERE arrival_timestamp >= '2024-01-01 00:30:00+00' GROUP BY k
   EXCEPT ALL SELECT k, n, d, first FROM recent)) x;
SELECT sum(n) AS rows_from_30th_minute, min(first) AS first_v FROM recent;

-- 3. 'none': empty until the next batch, which it counts
CREATE VIEW fresh WITH (continuous, backfill = 'none') AS SELECT k, count(*) AS n FROM ev GROUP BY k;
SELECT count(*) AS groups_before FROM fresh;
INSERT INTO ev (k, v) VALUES (1, 1000), (1, 1001), (2, 1002);
SELECT k, n FROM fresh ORDER BY k;
SELECT k, n FROM all_rows2 ORDER BY k;

-- 4. CREATE OR REPLACE takes them too: replaced from the 90th minute on
CREATE OR REPLACE VIEW recent WITH (continuous, backfill_from = '2024-01-01 01:30:00+00')
  AS SELECT k, count(*) AS n, count(DISTINCT v) AS d, min(v) AS first FROM ev GROUP BY k;
SELECT stream_ext.wait_backfill('recent');  -- built beside (sql/50_rebuild)
SELECT sum(n) AS rows_from_90th_minute FROM recent;
CREATE OR REPLACE VIEW fresh WITH (continuous, backfill = 'none')
  AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
SELECT count(*) AS groups_after_replace_none FROM fresh;

-- 5. nonsense
\set VERBOSITY default
CREATE VIEW e1 WITH (continuous, backfill = 'topic') AS SELECT k, count(*) FROM ev GROUP BY k;
CREATE VIEW e2 WITH (continuous, backfill = 'none', backfill_from = '2024-01-01') AS SELECT k, count(*) FROM ev GROUP BY k;
CREATE VIEW e3 WITH (continuous, backfill_from = 'yesterday noonish') AS SELECT k, count(*) FROM ev GROUP BY k;
CREATE VIEW e4 WITH (continuous, backfill_from = 'infinity') AS SELECT k, count(*) FROM ev GROUP BY k;
CREATE VIEW e5 WITH (continuous, backfill = 'kafka') AS SELECT k, count(*) FROM ev GROUP BY k;
CREATE VIEW e6 WITH (continuous, backfill = 'none') AS SELECT k, v FROM ev;
CREATE VIEW e7 WITH (continuous, backfill = 'kafka', session_gap = '1 minute', time_column = arrival_timestamp)
  AS SELECT k, count(*) FROM ev GROUP BY k;
\set VERBOSITY terse
SELECT count(*) AS nothing_half_created FROM pg_class WHERE relnamespace = 'bf'::regnamespace AND relname ~ '^e[0-9]';

-- 6. 'kafka': a source that has stored nothing yet is refused; with stored
--    offsets they become the hand-over, and the replay is recorded
SELECT stream_ext.create_kafka_source('bf_src', 'bf.ev', 'localhost:1', 'bf_topic', 'json');
\set VERBOSITY default
CREATE VIEW e8 WITH (continuous, backfill = 'kafka') AS SELECT k, count(*) FROM ev GROUP BY k;
\set VERBOSITY terse
INSERT INTO stream_ext.kafka_offsets (source, partition, next_offset) VALUES ('bf_src', 0, 40), ('bf_src', 1, 7);
CREATE VIEW replayed WITH (continuous, backfill = 'kafka', backfill_from = '2024-01-01 00:00:00+00')
  AS SELECT k, count(*) AS n, count(DISTINCT v) AS d FROM ev GROUP BY k;
-- not from the stream: empty until the replay or the next batch
SELECT count(*) AS groups FROM replayed;
SELECT view, source, backfill_from, state, partitions, offsets_total
  FROM stream_ext.backfill_progress WHERE kind = 'kafka replay';
SELECT partition, end_offset FROM stream_ext.backfill_offsets ORDER BY partition;
SELECT maintain_sql LIKE '%FROM stream_ext_replay)%' AS reads_replayed_rows,
       array_length(distinct_sql, 1) AS distinct_statements
  FROM stream_ext.backfills;
-- new batches reach it through the trigger meanwhile
INSERT INTO ev (k, v) VALUES (0, 1);
SELECT k, n, d FROM replayed;

-- a second source feeding the stream: which topic?  refused
SELECT stream_ext.create_kafka_source('bf_src2', 'bf.ev', 'localhost:1', 'bf_topic2', 'json');
\set VERBOSITY default
CREATE VIEW e9 WITH (continuous, backfill = 'kafka') AS SELECT k, count(*) FROM ev GROUP BY k;
\set VERBOSITY terse
SELECT stream_ext.drop_source('bf_src2');

-- someone else may read the stream, but not replay the source's topic
CREATE ROLE bf_other;
GRANT USAGE, CREATE ON SCHEMA bf TO bf_other;
GRANT SELECT ON ev TO bf_other;
SET ROLE bf_other;
\set VERBOSITY default
CREATE VIEW e10 WITH (continuous, backfill = 'kafka') AS SELECT k, count(*) FROM ev GROUP BY k;
\set VERBOSITY terse
CREATE VIEW others WITH (continuous, backfill = 'none') AS SELECT k, count(*) AS n FROM ev GROUP BY k;
-- nor cancel a replay of a view it does not own
SELECT stream_ext.cancel_backfill('bf.replayed');
SELECT stream_ext.cancel_backfill('bf.ev');
RESET ROLE;

-- a stream default that calls a user function would run as the view's
-- owner in the replay: only a creator with the stream owner's rights
CREATE ROLE bf_sowner;
CREATE ROLE bf_srcowner;
GRANT USAGE ON SCHEMA bf TO bf_sowner, bf_srcowner;
GRANT CREATE ON SCHEMA bf TO bf_srcowner;
CREATE FUNCTION bf.tagger() RETURNS text LANGUAGE sql AS $$ SELECT 'tag' $$;
SELECT stream_ext.create_stream('bf.ev2', 'k int, tag text DEFAULT bf.tagger()');
ALTER TABLE ev2 OWNER TO bf_sowner;
GRANT SELECT, INSERT ON ev2 TO bf_srcowner;
SET ROLE bf_srcowner;
SELECT stream_ext.create_kafka_source('bf_src3', 'bf.ev2', 'localhost:1', 'bf_topic3', 'json', '{"columns": ["k"]}');
RESET ROLE;
INSERT INTO stream_ext.kafka_offsets (source, partition, next_offset) VALUES ('bf_src3', 0, 1);
SET ROLE bf_srcowner;
\set VERBOSITY default
CREATE VIEW e11 WITH (continuous, backfill = 'kafka') AS SELECT tag, count(*) FROM ev2 GROUP BY tag;
\set VERBOSITY terse
RESET ROLE;
SELECT stream_ext.drop_source('bf_src3');
DROP TABLE ev2;
DROP FUNCTION bf.tagger();
REVOKE ALL ON SCHEMA bf FROM bf_sowner, bf_srcowner;
DROP ROLE bf_sowner;
DROP ROLE bf_srcowner;

-- 7. cancel: true once, the view keeps what it has
SELECT stream_ext.cancel_backfill('bf.replayed');
SELECT stream_ext.cancel_backfill('bf.replayed');
SELECT state, finished_at IS NOT NULL AS finished FROM stream_ext.backfill_progress WHERE kind = 'kafka replay';
SELECT k, n FROM replayed;

-- 8. DROP VIEW takes the replay's rows along
DROP VIEW replayed;
SELECT count(*) AS backfills, (SELECT count(*) FROM stream_ext.backfill_offsets) AS offsets
  FROM stream_ext.backfills;

SELECT stream_ext.drop_source('bf_src');
DROP VIEW others;
DROP SCHEMA bf CASCADE;
REVOKE ALL ON SCHEMA public FROM bf_other;
DROP ROLE bf_other;
