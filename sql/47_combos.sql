-- Combinations of change streams, changelog streams, roll-ups, stream
-- joins and backfill (docs/changes.md, changelog.md, joins.md,
-- continuous-views.md): each either exact against a plain SQL oracle or
-- refused with 0A000 and nothing left behind.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA cmb;
SET search_path = cmb, public;

-- replay of a change stream (the last new row per key, deletes left out)
-- against the view; 0 = equal
CREATE FUNCTION cmb.diff(view_sql text, replay_sql text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE d bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((%s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL %s)) x',
                 view_sql, replay_sql, replay_sql, view_sql) INTO d;
  RETURN d;
END $$;

-- 1. a view with changes over a changelog stream
SELECT stream_ext.create_stream('cmb.cl', 'id int, k int, v int', changelog => true);
CREATE VIEW clv WITH (continuous, changes = true) AS
  SELECT k, count(*) AS n, sum(v) AS s FROM cl GROUP BY k;
INSERT INTO cl (id, k, v) SELECT i, i % 5, i FROM generate_series(1, 20) i;
-- group 0 vanishes (all its rows retracted), group 1 loses one row
INSERT INTO cl (id, k, v, stream_ext_sign)
  SELECT i, i % 5, i, -1 FROM generate_series(1, 20) i WHERE i % 5 = 0 OR i = 1;
SELECT change_op, k, old_n, new_n, old_s, new_s FROM clv_changes
 WHERE change_seq > (SELECT min(change_seq) FROM clv_changes) ORDER BY change_seq, k;
SELECT * FROM clv ORDER BY k;
SELECT cmb.diff('SELECT k, n, s FROM cmb.clv',
  'SELECT k, new_n, new_s FROM (SELECT DISTINCT ON (k) * FROM cmb.clv_changes ORDER BY k, change_seq DESC) l WHERE change_op <> ''delete''') AS clv_diff;
-- a group back again
INSERT INTO cl (id, k, v) VALUES (100, 0, 7);
SELECT change_op, k, old_n, new_n FROM clv_changes ORDER BY change_seq DESC LIMIT 1;
SELECT cmb.diff('SELECT k, n, s FROM cmb.clv',
  'SELECT k, new_n, new_s FROM (SELECT DISTINCT ON (k) * FROM cmb.clv_changes ORDER BY k, change_seq DESC) l WHERE change_op <> ''delete''') AS clv_diff;
SELECT cmb.diff('SELECT k, n, s FROM cmb.clv',
  'SELECT k, sum(stream_ext_sign)::bigint, sum(v * stream_ext_sign)::bigint FROM cmb.cl GROUP BY k HAVING sum(stream_ext_sign) > 0') AS clv_oracle;

-- 2. changes on a join of two streams: refused (a batch of the second
-- stream is a unit of its own), at CREATE and by ALTER VIEW SET
SELECT stream_ext.create_stream('cmb.ja', 'k int, q int, ts timestamptz');
SELECT stream_ext.create_stream('cmb.jb', 'k int, w int, ts timestamptz');
CREATE VIEW jv WITH (continuous, changes = true) AS
  SELECT a.k, count(*) AS pairs, sum(a.q * b.w) AS qw
    FROM ja a JOIN jb b ON a.k = b.k AND b.ts BETWEEN a.ts - interval '1 minute' AND a.ts + interval '1 minute'
   GROUP BY a.k;
SELECT count(*) AS half_created FROM pg_class WHERE relname LIKE 'jv%';
CREATE VIEW jv WITH (continuous) AS
  SELECT a.k, count(*) AS pairs, sum(a.q * b.w) AS qw
    FROM ja a JOIN jb b ON a.k = b.k AND b.ts BETWEEN a.ts - interval '1 minute' AND a.ts + interval '1 minute'
   GROUP BY a.k;
ALTER VIEW jv SET (changes = true);
SELECT count(*) AS jv_changes FROM pg_class WHERE relname = 'jv_changes';
INSERT INTO ja SELECT i % 3, i, timestamptz '2024-01-01' FROM generate_series(1, 6) i;
INSERT INTO jb SELECT i % 3, i, timestamptz '2024-01-01' FROM generate_series(1, 6) i;
SELECT * FROM jv ORDER BY k;

-- 3. roll-ups: the upstream's change stream replays to the upstream, the
-- roll-up stays exact; a roll-up itself cannot have one
SELECT stream_ext.create_stream('cmb.ev', 'k int, v int');
CREATE VIEW fine WITH (continuous, changes = true) AS
  SELECT k, v % 2 AS p, count(*) AS n, sum(v) AS s FROM ev GROUP BY k, v % 2;
CREATE VIEW coarse WITH (continuous, changes = true) AS
  SELECT k, sum(n) AS n, sum(s) AS s FROM fine GROUP BY k;
SELECT count(*) AS half_created FROM pg_class WHERE relname LIKE 'coarse%';
CREATE VIEW coarse WITH (continuous) AS
  SELECT k, sum(n) AS n, sum(s) AS s FROM fine GROUP BY k;
ALTER VIEW coarse SET (changes = true);
SELECT count(*) AS coarse_changes FROM pg_class WHERE relname = 'coarse_changes';
INSERT INTO ev SELECT i % 4, i FROM generate_series(1, 30) i;
INSERT INTO ev SELECT i % 6, i FROM generate_series(1, 10) i;
SELECT cmb.diff('SELECT k, p, n, s FROM cmb.fine',
  'SELECT k, p, new_n, new_s FROM (SELECT DISTINCT ON (k, p) * FROM cmb.fine_changes ORDER BY k, p, change_seq DESC) l WHERE change_op <> ''delete''') AS fine_diff;
SELECT cmb.diff('SELECT k, n, s FROM cmb.coarse', 'SELECT k, count(*), sum(v) FROM cmb.ev GROUP BY k') AS coarse_oracle;
-- CREATE OR REPLACE of either: refused
CREATE OR REPLACE VIEW coarse WITH (continuous) AS
  SELECT k, sum(n) AS n FROM fine GROUP BY k;
CREATE OR REPLACE VIEW fine WITH (continuous) AS
  SELECT k, v % 2 AS p, count(*) AS n FROM ev GROUP BY k, v % 2;
SELECT cmb.diff('SELECT k, n, s FROM cmb.coarse', 'SELECT k, count(*), sum(v) FROM cmb.ev GROUP BY k') AS coarse_oracle;

-- 4. a roll-up over a view of a changelog stream: refused (its groups
-- shrink and vanish under retraction)
CREATE VIEW clfine WITH (continuous) AS
  SELECT k, id % 2 AS p, count(*) AS n, sum(v) AS s FROM cl GROUP BY k, id % 2;
CREATE VIEW clcoarse WITH (continuous) AS
  SELECT k, stream_ext.combine(n) AS n, stream_ext.combine(s) AS s FROM clfine GROUP BY k;
CREATE VIEW clcoarse WITH (continuous) AS
  SELECT k, sum(n) AS n FROM clfine GROUP BY k;
SELECT count(*) AS half_created FROM pg_class WHERE relname LIKE 'clcoarse%';

-- 5. a join with a changelog stream: exact when it is the first stream,
-- refused as the second
SELECT stream_ext.create_stream('cmb.jcl', 'k int, w int, ts timestamptz', changelog => true);
CREATE VIEW jclv WITH (continuous) AS
  SELECT a.k, count(*) AS pairs
    FROM ja a JOIN jcl b ON a.k = b.k AND b.ts BETWEEN a.ts - interval '1 minute' AND a.ts + interval '1 minute'
   GROUP BY a.k;
SELECT count(*) AS half_created FROM pg_class WHERE relname LIKE 'jclv%';
CREATE VIEW jclv2 WITH (continuous) AS
  SELECT a.k, count(*) AS pairs, sum(a.w * b.q) AS wq
    FROM jcl a JOIN ja b ON a.k = b.k AND b.ts BETWEEN a.ts - interval '1 minute' AND a.ts + interval '1 minute'
   GROUP BY a.k;
INSERT INTO jcl SELECT i % 4, i, timestamptz '2024-01-01' FROM generate_series(1, 8) i;
INSERT INTO jcl (k, w, ts, stream_ext_sign) SELECT i % 4, i, timestamptz '2024-01-01', -1 FROM generate_series(1, 2) i;
INSERT INTO ja SELECT i % 4, i, timestamptz '2024-01-01' FROM generate_series(1, 5) i;
-- key 0 loses every pair, key 3 every row
INSERT INTO jcl (k, w, ts, stream_ext_sign) SELECT i % 4, i, timestamptz '2024-01-01', -1 FROM generate_series(3, 8) i WHERE i % 4 IN (0, 3);
INSERT INTO ja SELECT i % 4, i, timestamptz '2024-01-01' FROM generate_series(1, 3) i;
SELECT * FROM jclv2 ORDER BY k;
SELECT cmb.diff('SELECT k, pairs, wq FROM cmb.jclv2',
  'SELECT a.k, sum(a.stream_ext_sign)::bigint, sum(a.w * b.q * a.stream_ext_sign)::bigint FROM cmb.jcl a JOIN cmb.ja b ON a.k = b.k AND b.ts BETWEEN a.ts - interval ''1 minute'' AND a.ts + interval ''1 minute'' GROUP BY a.k HAVING sum(a.stream_ext_sign) > 0') AS jclv2_oracle;
-- CREATE OR REPLACE of the join: the new query, exact after batches of both streams
CREATE OR REPLACE VIEW jclv2 WITH (continuous) AS
  SELECT a.k, count(*) AS pairs, sum(a.w * b.q) AS wq, avg(b.q) AS aq
    FROM jcl a JOIN ja b ON a.k = b.k AND b.ts BETWEEN a.ts - interval '1 minute' AND a.ts + interval '1 minute'
   GROUP BY a.k;
INSERT INTO ja SELECT i % 4, i, timestamptz '2024-01-01' FROM generate_series(10, 13) i;
INSERT INTO jcl (k, w, ts, stream_ext_sign) VALUES (1, 5, '2024-01-01', -1), (3, 9, '2024-01-01', 1);
SELECT cmb.diff('SELECT k, pairs, wq, aq FROM cmb.jclv2',
  'SELECT a.k, sum(a.stream_ext_sign)::bigint, sum(a.w * b.q * a.stream_ext_sign)::bigint, sum(b.q * a.stream_ext_sign) / sum(a.stream_ext_sign)::numeric FROM cmb.jcl a JOIN cmb.ja b ON a.k = b.k AND b.ts BETWEEN a.ts - interval ''1 minute'' AND a.ts + interval ''1 minute'' GROUP BY a.k HAVING sum(a.stream_ext_sign) > 0') AS jclv2_oracle;

-- 6. backfill: 'none' with changes starts empty and replays to the view;
-- 'kafka' with changes is refused (replayed rows would emit no change);
-- 'kafka' from a Debezium source: test/t/185_combos_debezium_replay.pl
CREATE VIEW fresh WITH (continuous, backfill = 'none', changes = true) AS
  SELECT k, count(*) AS n FROM ev GROUP BY k;
SELECT count(*) AS snapshot_rows FROM fresh_changes;
INSERT INTO ev SELECT i % 3, i FROM generate_series(1, 7) i;
SELECT * FROM fresh ORDER BY k;
SELECT cmb.diff('SELECT k, n FROM cmb.fresh',
  'SELECT k, new_n FROM (SELECT DISTINCT ON (k) * FROM cmb.fresh_changes ORDER BY k, change_seq DESC) l WHERE change_op <> ''delete''') AS fresh_diff;
SELECT stream_ext.create_kafka_source('cmb_src', 'cmb.ev', 'localhost:1', 'cmb_topic', 'json');
INSERT INTO stream_ext.kafka_offsets (source, partition, next_offset) VALUES ('cmb_src', 0, 10);
CREATE VIEW replayed WITH (continuous, backfill = 'kafka', changes = true) AS
  SELECT k, count(*) AS n FROM ev GROUP BY k;
SELECT count(*) AS half_created FROM pg_class WHERE relname LIKE 'replayed%';
-- ALTER VIEW SET (changes = true) waits for the replay to finish
CREATE VIEW replayed WITH (continuous, backfill = 'kafka') AS
  SELECT k, count(*) AS n FROM ev GROUP BY k;
SELECT state FROM stream_ext.backfills WHERE view = 'cmb.replayed'::regclass;
ALTER VIEW replayed SET (changes = true);
SELECT count(*) AS replayed_changes FROM pg_class WHERE relname = 'replayed_changes';
SELECT stream_ext.cancel_backfill('cmb.replayed');
ALTER VIEW replayed SET (changes = true);
SELECT count(*) AS replayed_changes FROM pg_class WHERE relname = 'replayed_changes';
DROP VIEW replayed;
SELECT stream_ext.drop_source('cmb_src');

-- 7. CREATE OR REPLACE and ALTER VIEW SET on a changelog view with changes
CREATE OR REPLACE VIEW clv WITH (continuous) AS
  SELECT k, count(*) AS n FROM cl GROUP BY k;
SELECT stream_ext.wait_backfill('clv');  -- built beside (sql/50_rebuild)
ALTER VIEW clv SET (changes = false);
CREATE OR REPLACE VIEW clv WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, avg(id) AS aid FROM cl GROUP BY k;
SELECT stream_ext.wait_backfill('clv');
ALTER VIEW clv SET (changes = true);
INSERT INTO cl (id, k, v, stream_ext_sign) SELECT id, k, v, -1 FROM cl WHERE k = 2 GROUP BY id, k, v HAVING sum(stream_ext_sign) > 0;
INSERT INTO cl (id, k, v) VALUES (300, 4, 1), (301, 7, 2);
SELECT change_op, k, old_n, new_n FROM clv_changes
 WHERE change_seq > (SELECT min(change_seq) FROM clv_changes) ORDER BY change_seq, k;
SELECT cmb.diff('SELECT k, n, s FROM cmb.clv',
  'SELECT k, new_n, new_s FROM (SELECT DISTINCT ON (k) * FROM cmb.clv_changes ORDER BY k, change_seq DESC) l WHERE change_op <> ''delete''') AS clv_diff;
SELECT cmb.diff('SELECT k, n, s, aid FROM cmb.clv',
  'SELECT k, sum(stream_ext_sign)::bigint, sum(v * stream_ext_sign)::bigint, sum(id * stream_ext_sign) / sum(stream_ext_sign)::numeric FROM cmb.cl GROUP BY k HAVING sum(stream_ext_sign) > 0') AS clv_oracle;
SELECT cmb.diff('SELECT k, n, s, aid FROM cmb.clv',
  'SELECT k, new_n, new_s, new_aid FROM (SELECT DISTINCT ON (k) * FROM cmb.clv_changes ORDER BY k, change_seq DESC) l WHERE change_op <> ''delete''') AS clv_diff;

SET client_min_messages = warning;
DROP SCHEMA cmb CASCADE;
