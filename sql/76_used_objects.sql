-- What a continuous view uses besides its stream (docs/continuous-views.md,
-- "Objects a view uses"): its maintenance statements are SQL that names
-- the functions, types and tables of its definition.  Dropping one of them
-- is refused as for a view of PostgreSQL (CASCADE takes the view along),
-- renaming or moving one is refused with the view's name -- either would
-- make every insert into the stream fail.  The stream itself can be
-- renamed and moved: its views' recorded definitions follow, so
-- stream_ext.combine() and reads by key still analyze them -- unless a
-- view joins it with another stream, or a Kafka sink keys its messages by
-- one of its columns (that column then keeps its name).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE uo76_fn;
CREATE ROLE uo76_an;
CREATE SCHEMA uo76 AUTHORIZATION uo76_an;
CREATE SCHEMA uo76_lib AUTHORIZATION uo76_fn;
GRANT USAGE ON SCHEMA uo76_lib TO uo76_an;
SET ROLE uo76_fn;
CREATE FUNCTION uo76_lib.bucket(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 / 10';
CREATE TYPE uo76_lib.level AS ENUM ('low', 'high');
CREATE FUNCTION uo76_lib.level_of(int) RETURNS uo76_lib.level LANGUAGE sql IMMUTABLE
    AS $$SELECT CASE WHEN $1 < 50 THEN 'low' ELSE 'high' END::uo76_lib.level$$;
CREATE TABLE uo76_lib.dim (k int PRIMARY KEY, name text);
INSERT INTO uo76_lib.dim SELECT i, 'n' || i FROM generate_series(0, 9) i;
GRANT SELECT ON uo76_lib.dim TO uo76_an;
SET ROLE uo76_an;
SELECT stream_ext.create_stream('uo76.ev', 'k int, v int');
CREATE VIEW uo76.by_bucket WITH (continuous) AS
    SELECT uo76_lib.bucket(v) AS b, count(*) AS n, sum(v) AS s
      FROM uo76.ev WHERE uo76_lib.level_of(v) = 'high'::uo76_lib.level GROUP BY 1;
CREATE VIEW uo76.by_name WITH (continuous) AS
    SELECT d.name, count(*) AS n FROM uo76.ev JOIN uo76_lib.dim d ON d.k = uo76.ev.k GROUP BY 1;
CREATE VIEW uo76.by_k WITH (continuous) AS
    SELECT k, count(*) AS n, avg(v) AS a FROM uo76.ev GROUP BY k;
INSERT INTO uo76.ev SELECT i % 10, i FROM generate_series(1, 100) i;

-- the function's owner cannot rename, move or drop what the views use
SET ROLE uo76_fn;
ALTER FUNCTION uo76_lib.bucket(int) RENAME TO bucket2;
ALTER FUNCTION uo76_lib.bucket(int) SET SCHEMA public;
ALTER TYPE uo76_lib.level RENAME TO lvl;
ALTER TYPE uo76_lib.level RENAME VALUE 'high' TO 'hi';
ALTER TYPE uo76_lib.level ADD VALUE 'mid' BEFORE 'high';
ALTER TABLE uo76_lib.dim RENAME TO dim2;
ALTER TABLE uo76_lib.dim RENAME COLUMN name TO label;
ALTER TABLE uo76_lib.dim ALTER COLUMN name TYPE varchar(20);
ALTER TABLE uo76_lib.dim SET SCHEMA public;
ALTER SCHEMA uo76_lib RENAME TO uo76_lib2;
DROP FUNCTION uo76_lib.bucket(int);
DROP FUNCTION uo76_lib.level_of(int);
-- what the views do not use is free
ALTER TABLE uo76_lib.dim ADD COLUMN note text;
ALTER TABLE uo76_lib.dim RENAME COLUMN note TO remark;
CREATE FUNCTION uo76_lib.unused(int) RETURNS int LANGUAGE sql AS 'SELECT $1';
ALTER FUNCTION uo76_lib.unused(int) RENAME TO unused2;

-- so the stream's owner can still insert
SET ROLE uo76_an;
INSERT INTO uo76.ev SELECT i % 10, i FROM generate_series(101, 200) i;
SELECT (SELECT array_agg(row(b, n, s) ORDER BY b) FROM uo76.by_bucket)
     = (SELECT array_agg(row(b, n, s) ORDER BY b) FROM
         (SELECT uo76_lib.bucket(v) AS b, count(*) AS n, sum(v) AS s FROM uo76.ev
           WHERE uo76_lib.level_of(v) = 'high' GROUP BY 1) q) AS by_bucket_equal;

-- the stream renamed, moved, its schema renamed: inserts go on, the
-- recorded definitions name it as it is, combine() analyzes them
ALTER TABLE uo76.ev RENAME TO events;
INSERT INTO uo76.events VALUES (3, 1000);
RESET ROLE;
CREATE SCHEMA uo76_s AUTHORIZATION uo76_an;
SET ROLE uo76_an;
ALTER TABLE uo76.events SET SCHEMA uo76_s;
INSERT INTO uo76_s.events VALUES (3, 1001);
SELECT view, definition FROM stream_ext.view_catalog WHERE view::text LIKE 'uo76.%' ORDER BY 1;
SELECT stream_ext.combine(a) = (SELECT avg(v) FROM uo76_s.events) AS combine_equal FROM uo76.by_k;
SELECT * FROM uo76.by_k WHERE k = 3;
SELECT obj_description('uo76.by_k'::regclass) LIKE '%uo76_s.events%' AS comment_follows;
RESET ROLE;
ALTER SCHEMA uo76_s RENAME TO uo76_t;
SELECT definition LIKE '%FROM uo76_t.events%' AS renamed_schema
  FROM stream_ext.view_catalog WHERE view = 'uo76.by_k'::regclass;
SET ROLE uo76_an;
SELECT stream_ext.combine(n) = (SELECT count(*) FROM uo76_t.events) AS combine_equal FROM uo76.by_k;

-- a stream joined with another one is named by the other's batch
-- statement: it cannot be renamed or moved while the join exists
SELECT stream_ext.create_stream('uo76.orders', 'k int, ts timestamptz');
SELECT stream_ext.create_stream('uo76_t.ships', 'k int, ts timestamptz');
CREATE VIEW uo76.matched WITH (continuous) AS
    SELECT o.k, count(*) AS n FROM uo76.orders o JOIN uo76_t.ships s
        ON s.k = o.k AND s.ts BETWEEN o.ts - interval '1 hour' AND o.ts + interval '1 hour'
     GROUP BY o.k;
ALTER TABLE uo76.orders RENAME TO orders2;
ALTER TABLE uo76_t.ships RENAME TO ships2;
ALTER TABLE uo76_t.ships SET SCHEMA uo76;
RESET ROLE;
ALTER SCHEMA uo76_t RENAME TO uo76_u;
SET ROLE uo76_an;
INSERT INTO uo76.orders VALUES (1, '2026-01-01 10:00');
INSERT INTO uo76_t.ships VALUES (1, '2026-01-01 10:30');
SELECT * FROM uo76.matched;
DROP VIEW uo76.matched;
ALTER TABLE uo76.orders RENAME TO orders2;

-- DROP ... CASCADE by the function's owner takes the view along; the
-- stream and its other views go on
SET ROLE uo76_fn;
DROP FUNCTION uo76_lib.bucket(int) CASCADE;
SET ROLE uo76_an;
SELECT view FROM stream_ext.view_catalog WHERE view::text LIKE 'uo76.%' ORDER BY 1;
INSERT INTO uo76_t.events VALUES (4, 7);
SELECT sum(n) = (SELECT count(*) FROM uo76_t.events) AS by_k_complete FROM uo76.by_k;
-- a transform's functions too
CREATE VIEW uo76.tr WITH (continuous) AS
    SELECT k, uo76_lib.level_of(v) AS lvl FROM uo76_t.events;
INSERT INTO uo76_t.events VALUES (5, 70);
SELECT (SELECT count(*) FROM uo76.tr WHERE lvl = 'high')
     = (SELECT count(*) FROM uo76_t.events WHERE v >= 50) AS transform_equal;
DROP VIEW uo76.by_name;
SET ROLE uo76_fn;
DROP FUNCTION uo76_lib.level_of(int);
ALTER TABLE uo76_lib.dim RENAME TO dim2;
SET ROLE uo76_an;
DROP VIEW uo76.tr;
SET ROLE uo76_fn;
DROP FUNCTION uo76_lib.level_of(int);

-- a stream a view emits its closed windows into: named by the view's
-- statements, as are its columns
SET ROLE uo76_an;
SELECT stream_ext.create_stream('uo76.hl', 'k int, ts timestamptz');
SELECT stream_ext.create_stream('uo76.hl_out', 'k int, window_start timestamptz, n bigint');
CREATE VIEW uo76.hl_view WITH (continuous, allowed_lateness = '1 minute', emit = 'on_close',
                               output_stream = 'uo76.hl_out') AS
    SELECT k, stream_ext.tumble(ts, '1 minute') AS window_start, count(*) AS n
      FROM uo76.hl GROUP BY 1, 2;
ALTER TABLE uo76.hl_out RENAME TO hl_out2;
ALTER TABLE uo76.hl_out SET SCHEMA uo76_t;
ALTER TABLE uo76.hl_out RENAME COLUMN n TO cnt;
ALTER TABLE uo76.hl_out ADD COLUMN note text;
DROP TABLE uo76.hl_out;
-- the emitting view reads its own rows by name too
ALTER VIEW uo76.hl_view RENAME TO hl_view2;
ALTER VIEW uo76.hl_view RENAME COLUMN n TO cnt;
ALTER TABLE uo76.hl RENAME TO hl2;
INSERT INTO uo76.hl2 VALUES (1, '2026-01-01 10:00'), (1, '2026-01-01 10:05');
SELECT k, window_start, n FROM uo76.hl_out;

-- a view with a change stream: the statement feeding it names the view's
-- row type and columns
CREATE VIEW uo76.hits WITH (continuous, changes = true) AS
    SELECT k, count(*) AS n FROM uo76.hl2 GROUP BY k;
ALTER VIEW uo76.hits RENAME TO hits2;
ALTER TABLE uo76.hits RENAME TO hits2;
ALTER VIEW uo76.hits SET SCHEMA uo76_t;
ALTER VIEW uo76.hits RENAME COLUMN n TO hits;
INSERT INTO uo76.hl2 VALUES (2, '2026-01-01 10:06');
ALTER VIEW uo76.hits SET (changes = false);
ALTER VIEW uo76.hits RENAME TO hits2;
ALTER VIEW uo76.hits2 RENAME COLUMN n TO hits;
ALTER VIEW uo76.hits2 SET (changes = true);
INSERT INTO uo76.hl2 VALUES (2, '2026-01-01 10:07');
SELECT change_op, k, old_hits, new_hits FROM uo76.hits2_changes ORDER BY change_seq, k;

-- stream_ext's triggers on a stream cannot be switched off, dropped or
-- renamed by its owner: the views would silently stop following it
ALTER TABLE uo76.hl2 DISABLE TRIGGER stream_ext_maintain;
ALTER TABLE uo76.hl2 DISABLE TRIGGER stream_ext_append_only;
ALTER TABLE uo76.hl2 ENABLE REPLICA TRIGGER stream_ext_maintain;
ALTER TABLE uo76.hl2 DISABLE TRIGGER USER;
ALTER TABLE uo76.hl2 DISABLE TRIGGER ALL;
DROP TRIGGER stream_ext_maintain ON uo76.hl2;
DROP TRIGGER stream_ext_append_only ON uo76.hl2;
ALTER TRIGGER stream_ext_maintain ON uo76.hl2 RENAME TO mine;
-- its own triggers can
CREATE FUNCTION uo76.noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
CREATE TRIGGER own AFTER INSERT ON uo76.hl2 FOR EACH STATEMENT EXECUTE FUNCTION uo76.noop();
ALTER TABLE uo76.hl2 DISABLE TRIGGER own;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'uo76.hl2'::regclass ORDER BY 1;

-- a Kafka sink's key column: its queue statement names it (the stream's
-- owner is refused even for another role's sink it cannot see)
SET ROLE uo76_an;
SELECT stream_ext.create_stream('uo76.clicks', 'url text, v int');
RESET ROLE;
SELECT stream_ext.create_kafka_sink('uo76 sink', 'uo76.clicks', 'localhost:1', 'out', 'json', 'url');
SET ROLE uo76_an;
ALTER TABLE uo76.clicks RENAME COLUMN url TO u;
ALTER TABLE uo76.clicks DROP COLUMN url;
ALTER TABLE uo76.clicks RENAME COLUMN v TO value;
INSERT INTO uo76.clicks VALUES ('/a', 1);
RESET ROLE;
SELECT key, payload FROM stream_ext.sink_queue q JOIN stream_ext.kafka_sinks s ON s.id = q.sink
 WHERE s.name = 'uo76 sink';
SELECT stream_ext.drop_sink('uo76 sink');
SET ROLE uo76_an;
ALTER TABLE uo76.clicks RENAME COLUMN url TO u;
INSERT INTO uo76.clicks VALUES ('/b', 2);
-- a Kafka source's options naming columns: it inserts into them by name
RESET ROLE;
SELECT stream_ext.create_kafka_source('uo76 src', 'uo76.clicks', 'localhost:1', 't', 'json',
       '{"columns": ["value"], "key_column": "u"}');
SET ROLE uo76_an;
ALTER TABLE uo76.clicks RENAME COLUMN u TO url;
ALTER TABLE uo76.clicks DROP COLUMN value;
ALTER TABLE uo76.clicks ADD COLUMN note text;
ALTER TABLE uo76.clicks RENAME COLUMN note TO remark;
RESET ROLE;
SELECT stream_ext.drop_source('uo76 src');
SET ROLE uo76_an;
ALTER TABLE uo76.clicks RENAME COLUMN u TO url;

RESET ROLE;
DROP SCHEMA uo76 CASCADE;
DROP SCHEMA uo76_t CASCADE;
DROP SCHEMA uo76_lib CASCADE;
DROP ROLE uo76_fn;
DROP ROLE uo76_an;
