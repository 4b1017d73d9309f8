-- Shared storage (ddl/shared_storage.c): what shares and what does not,
-- and each operation on a member that works through the storage or is
-- refused with the reason (a member's states are columns of tables other
-- views write too).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

CREATE SCHEMA sr;
SELECT stream_ext.create_stream('sr.ev', 'k int, ts timestamptz, v int');
CREATE VIEW sr.a WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s FROM sr.ev GROUP BY k;
CREATE VIEW sr.b WITH (continuous) AS
  SELECT k AS key, avg(v) AS mean, max(v) AS hi FROM sr.ev GROUP BY k;
-- not sharing: another WHERE; count(DISTINCT); no GROUP BY; TTL; a
-- sliding window; a change stream
CREATE VIEW sr.c_where WITH (continuous) AS
  SELECT k, count(*) AS n FROM sr.ev WHERE v > 0 GROUP BY k;
CREATE VIEW sr.c_distinct WITH (continuous) AS
  SELECT k, count(*) AS n, count(DISTINCT v) AS d FROM sr.ev GROUP BY k;
CREATE VIEW sr.c_all WITH (continuous) AS SELECT count(*) AS n FROM sr.ev;
CREATE VIEW sr.c_ttl WITH (continuous, ttl = '1 day', ttl_column = 'minute') AS
  SELECT k, date_trunc('minute', ts) AS minute, count(*) AS n FROM sr.ev GROUP BY k, minute;
CREATE VIEW sr.c_ttl2 WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, sum(v) AS s FROM sr.ev GROUP BY k, minute;
CREATE VIEW sr.c_changes WITH (continuous, changes = true) AS
  SELECT k, count(*) AS n FROM sr.ev WHERE v > 0 GROUP BY k;
SELECT v.view, m.prefix, v.matrel
  FROM stream_ext.view_catalog v LEFT JOIN stream_ext.shared_storage_members m USING (view)
 WHERE v.stream = 'sr.ev'::regclass ORDER BY v.view::text;

INSERT INTO sr.ev SELECT i % 5, '2024-01-01'::timestamptz + i * interval '1 s', i FROM generate_series(1, 100) i;

-- refused for a member, with the reason (drop it and create it again, or
-- CREATE OR REPLACE it: below)
ALTER VIEW sr.b OWNER TO pg_monitor;
ALTER VIEW sr.b SET (ttl = '1 day');
ALTER VIEW sr.b SET (changes = true);
ALTER VIEW sr.a SET (allowed_lateness = '1 minute');
CREATE VIEW sr.rollup WITH (continuous) AS SELECT max(hi) AS hi FROM sr.b;
SELECT stream_ext.distributed_select_sql('sr.a', ARRAY['sr.a_mrel'::regclass]);
-- the shared tables: not altered, not written, not dropped alone
ALTER TABLE sr.a_mrel ADD COLUMN x int;
INSERT INTO sr.a_delta (k) VALUES (1);
DROP TABLE sr.a_delta;

-- working through the storage
-- notify is the view's own
ALTER VIEW sr.b SET (notify = 'sr_b');
SELECT notify FROM stream_ext.view_catalog WHERE view = 'sr.b'::regclass;
-- combine() reads the view
SELECT stream_ext.combine(n) AS n, stream_ext.combine(s) AS s FROM sr.a;
SELECT stream_ext.combine(mean) AS mean, stream_ext.combine(hi) AS hi FROM sr.b;
-- an index on a member's column is an index on its column of the storage
SELECT stream_ext.create_index('sr.b', 'hi');
SELECT indexdef FROM pg_indexes WHERE tablename = 'a_mrel' AND indexdef LIKE '%m2_state_max_2%';
-- compact(), view_groups(), view_stats: the storage's compaction, the
-- member's groups and rows
SELECT stream_ext.view_delta_rows('sr.a') AS a_rows, stream_ext.view_delta_rows('sr.b') AS b_rows;
SELECT stream_ext.compact('sr.b') AS folded, stream_ext.compact('sr.a') AS folded_again;
SELECT stream_ext.view_groups('sr.a') AS a_groups, stream_ext.view_groups('sr.b') AS b_groups;
SELECT * FROM sr.a ORDER BY k;
SELECT * FROM sr.b ORDER BY key;
-- explain(): one INSERT for the storage, the others' own statements
SELECT line FROM stream_ext.explain('sr.b') AS line
 WHERE line LIKE 'Shared%' OR line LIKE 'Its states%' OR line LIKE '%Insert on%';

-- CREATE OR REPLACE of a member gives it tables of its own: built beside
-- it and swapped in (the default), or in place; the others keep the storage
CREATE VIEW sr.c WITH (continuous) AS
  SELECT k, count(*) AS n, min(v) AS lo FROM sr.ev GROUP BY k;
SELECT view, prefix FROM stream_ext.shared_storage_members
 WHERE view::text LIKE 'sr.%' ORDER BY 2;
CREATE OR REPLACE VIEW sr.b WITH (continuous) AS
  SELECT k AS key, avg(v) AS mean, max(v) AS hi, min(v) AS lo FROM sr.ev GROUP BY k;
SELECT stream_ext.wait_backfill('sr.b', '5 minutes');
CREATE OR REPLACE VIEW sr.c WITH (continuous, backfill = 'none') AS
  SELECT k, count(*) AS n, max(v) AS hi FROM sr.ev GROUP BY k;
SELECT v.view, m.prefix, v.matrel = 'sr.a_mrel'::regclass AS in_storage, v.compact_sql IS NOT NULL AS compacts
  FROM stream_ext.view_catalog v LEFT JOIN stream_ext.shared_storage_members m USING (view)
 WHERE v.view IN ('sr.a'::regclass, 'sr.b'::regclass, 'sr.c'::regclass) ORDER BY v.view::text;
INSERT INTO sr.ev SELECT i % 7, '2024-01-01'::timestamptz + i * interval '1 s', -i FROM generate_series(1, 50) i;
SELECT (SELECT count(*) FROM ((TABLE sr.a EXCEPT ALL SELECT k, count(*), sum(v) FROM sr.ev GROUP BY k)
          UNION ALL (SELECT k, count(*), sum(v) FROM sr.ev GROUP BY k EXCEPT ALL TABLE sr.a)) d) AS a_differing,
       (SELECT count(*) FROM ((TABLE sr.b EXCEPT ALL SELECT k, avg(v), max(v), min(v) FROM sr.ev GROUP BY k)
          UNION ALL (SELECT k, avg(v), max(v), min(v) FROM sr.ev GROUP BY k EXCEPT ALL TABLE sr.b)) d) AS b_differing;
SELECT * FROM sr.c ORDER BY k;
-- the last member replaced: the storage's tables go
CREATE OR REPLACE VIEW sr.a WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, max(v) AS hi FROM sr.ev GROUP BY k;
SELECT stream_ext.wait_backfill('sr.a', '5 minutes');
SELECT count(*) AS storages FROM stream_ext.shared_storage WHERE stream = 'sr.ev'::regclass;
SELECT to_regclass('sr.a_mrel') IS NOT NULL AS a_mrel, to_regclass('sr.a_delta') IS NOT NULL AS a_delta;
SELECT count(*) AS a_differing FROM ((TABLE sr.a EXCEPT ALL SELECT k, count(*), sum(v), max(v) FROM sr.ev GROUP BY k)
          UNION ALL (SELECT k, count(*), sum(v), max(v) FROM sr.ev GROUP BY k EXCEPT ALL TABLE sr.a)) d;

-- a view of another owner never shares: tables of its own
CREATE ROLE sr_other;
GRANT USAGE, CREATE ON SCHEMA sr TO sr_other;
GRANT SELECT ON sr.ev TO sr_other;
SET ROLE sr_other;
CREATE VIEW sr.other WITH (continuous) AS SELECT k, min(v) AS lo FROM sr.ev GROUP BY k;
RESET ROLE;
SELECT matrel FROM stream_ext.view_catalog WHERE view = 'sr.other'::regclass;

-- DROP of the stream takes a storage along
DROP VIEW sr.other;
DROP OWNED BY sr_other;
DROP ROLE sr_other;
CREATE VIEW sr.d WITH (continuous) AS SELECT k, v, count(*) AS n FROM sr.ev GROUP BY k, v;
CREATE VIEW sr.e WITH (continuous) AS SELECT k, v, sum(v) AS s FROM sr.ev GROUP BY k, v;
SELECT count(*) AS storages FROM stream_ext.shared_storage WHERE stream = 'sr.ev'::regclass;
SELECT oid AS ev_oid FROM pg_class WHERE oid = 'sr.ev'::regclass \gset
DROP TABLE sr.ev CASCADE;
SELECT count(*) AS views FROM stream_ext.view_catalog WHERE stream::oid = :ev_oid;
SELECT count(*) AS storages FROM stream_ext.shared_storage WHERE stream::oid = :ev_oid;
DROP SCHEMA sr CASCADE;
