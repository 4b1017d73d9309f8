-- REVOKE and the objects other roles attach to a stream (docs/security.md).
-- A reader's continuous view, transform or Kafka sink is maintained as the
-- reader, checked at every batch: when the reader loses a privilege, it
-- stops receiving rows and is marked invalid (reading it raises 42501), and
-- the stream's owner keeps inserting.  Nothing a reader builds can block
-- the owner's inserts, and the owner can always drop a sink on its stream.
-- Each case has its own stream, so that each shows on its own.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE owner_r;
CREATE ROLE reader_r;
CREATE ROLE other_r;
CREATE SCHEMA se19 AUTHORIZATION owner_r;
-- the reader's own schema, which the stream's owner cannot use
CREATE SCHEMA se19_r AUTHORIZATION reader_r;
GRANT USAGE, CREATE ON SCHEMA se19 TO reader_r;

SET ROLE owner_r;
SELECT stream_ext.create_stream('se19.ev', 'k text, v int, w int');
SELECT stream_ext.create_stream('se19.evj', 'k text');
SELECT stream_ext.create_stream('se19.evt', 'k text');
SELECT stream_ext.create_stream('se19.out_s', 'k text');
SELECT stream_ext.create_stream('se19.evh', 'k text, v int');
SELECT stream_ext.create_stream('se19.evs', 'k text');
CREATE TABLE se19.dim (k text PRIMARY KEY, label text);
INSERT INTO se19.dim VALUES ('a', 'A'), ('b', 'B');
INSERT INTO se19.ev VALUES ('a', 1, 10);
GRANT SELECT ON se19.ev, se19.evj, se19.evt, se19.evh, se19.evs, se19.dim TO reader_r;
GRANT INSERT ON se19.out_s TO reader_r;
RESET ROLE;

-- 3a: a view and a transform in the reader's own schema: the owner
-- inserts although it cannot use that schema
SET ROLE reader_r;
CREATE VIEW se19_r.hidden WITH (continuous) AS SELECT k, count(*) AS n FROM se19.evh GROUP BY k;
CREATE VIEW se19_r.hidden_rows WITH (continuous) AS SELECT k, v FROM se19.evh;
-- ... and a second view on the same stream can still be created
CREATE VIEW se19_r.hidden2 WITH (continuous) AS SELECT count(*) AS n FROM se19.evh;
RESET ROLE;
SET ROLE owner_r;
INSERT INTO se19.evh VALUES ('a', 2), ('b', 3);
COPY se19.evh (k, v) FROM stdin;
b	4
\.
SELECT count(*) FROM se19.evh;
RESET ROLE;
SET ROLE reader_r;
SELECT * FROM se19_r.hidden ORDER BY k;
SELECT * FROM se19_r.hidden_rows ORDER BY k, v;
SELECT * FROM se19_r.hidden2;
RESET ROLE;

-- 2, view and transform: the owner revokes SELECT on the stream; they
-- stop receiving rows, and every insert succeeds
SET ROLE reader_r;
CREATE VIEW se19.counts WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s FROM se19.ev GROUP BY k;
CREATE VIEW se19.copy WITH (continuous) AS SELECT k, v FROM se19.ev;
RESET ROLE;
SET ROLE owner_r;
INSERT INTO se19.ev VALUES ('a', 2, 20), ('b', 3, 30);
REVOKE SELECT ON se19.ev FROM reader_r;
INSERT INTO se19.ev VALUES ('a', 100, 1000);
INSERT INTO se19.ev VALUES ('c', 100, 1000);
COPY se19.ev (k, v, w) FROM stdin;
c	100	1000
\.
SELECT count(*) FROM se19.ev;
RESET ROLE;
SET ROLE reader_r;
SELECT * FROM se19.counts ORDER BY k;
SELECT * FROM se19.copy ORDER BY k, v;
SELECT k, n FROM se19.counts WHERE k = 'a';
RESET ROLE;
-- the materializations (and the view's delta) did not receive the rows
SELECT k FROM se19.counts_mrel UNION SELECT k FROM se19.counts_delta ORDER BY k;
SELECT count(*) FROM se19.copy_mrel;
-- where it shows
SELECT view, valid, invalid_reason FROM stream_ext.view_stats
 WHERE view = 'se19.counts'::regclass;
SELECT name, valid, invalid_reason FROM stream_ext.transforms WHERE name = 'se19.copy'::regclass;
SELECT object, kind, reason FROM stream_ext.invalid_objects ORDER BY object::text;

-- granting SELECT back does not revive them: they missed rows (a new
-- session sees the same)
\c -
SET ROLE owner_r;
GRANT SELECT ON se19.ev TO reader_r;
INSERT INTO se19.ev VALUES ('a', 1, 1);
RESET ROLE;
SET ROLE reader_r;
SELECT * FROM se19.counts ORDER BY k;
-- rebuilt, a view is whole again and valid
DROP VIEW se19.counts;
CREATE VIEW se19.counts WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s FROM se19.ev GROUP BY k;
SELECT * FROM se19.counts ORDER BY k;
RESET ROLE;
SELECT object FROM stream_ext.invalid_objects ORDER BY object::text;
SELECT view, valid FROM stream_ext.view_stats WHERE view = 'se19.counts'::regclass;

-- column privileges: a view reading only k survives losing v; one
-- reading v does not
SET ROLE owner_r;
REVOKE SELECT ON se19.ev FROM reader_r;
GRANT SELECT (k, v) ON se19.ev TO reader_r;
RESET ROLE;
SET ROLE reader_r;
DROP VIEW se19.counts;
CREATE VIEW se19.by_k WITH (continuous) AS SELECT k, count(*) AS n FROM se19.ev GROUP BY k;
CREATE VIEW se19.sum_v WITH (continuous) AS SELECT k, sum(v) AS s FROM se19.ev GROUP BY k;
RESET ROLE;
SET ROLE owner_r;
REVOKE SELECT (v) ON se19.ev FROM reader_r;
INSERT INTO se19.ev VALUES ('d', 1, 1);
RESET ROLE;
SET ROLE reader_r;
SELECT * FROM se19.by_k WHERE k = 'd';
SELECT * FROM se19.sum_v WHERE k = 'd';
RESET ROLE;

-- 2, joined table: SELECT on it revoked; the joined view is invalid, the
-- insert succeeds
SET ROLE reader_r;
CREATE VIEW se19.labelled WITH (continuous) AS
  SELECT d.label, count(*) AS n FROM se19.evj e JOIN se19.dim d ON d.k = e.k GROUP BY d.label;
RESET ROLE;
SET ROLE owner_r;
INSERT INTO se19.evj VALUES ('a'), ('b');
REVOKE SELECT ON se19.dim FROM reader_r;
INSERT INTO se19.evj VALUES ('a');
SELECT count(*) FROM se19.evj;
RESET ROLE;
SET ROLE reader_r;
SELECT * FROM se19.labelled ORDER BY label;
RESET ROLE;
SELECT view, valid, invalid_reason FROM stream_ext.view_stats
 WHERE view = 'se19.labelled'::regclass;

-- 2, transform into the owner's output stream: INSERT on it revoked
SET ROLE reader_r;
CREATE VIEW se19.fwd WITH (continuous, output_stream = 'se19.out_s') AS SELECT k FROM se19.evt;
RESET ROLE;
SET ROLE owner_r;
INSERT INTO se19.evt VALUES ('a');
REVOKE INSERT ON se19.out_s FROM reader_r;
INSERT INTO se19.evt VALUES ('b');
SELECT k FROM se19.evt ORDER BY k;
SELECT k FROM se19.out_s;
RESET ROLE;
SELECT name, valid, invalid_reason FROM stream_ext.transforms WHERE name = 'se19.fwd'::regclass;

-- 3b: a reader's Kafka sink neither blocks the owner's inserts nor stays
-- against the owner's will
SET ROLE reader_r;
SELECT stream_ext.create_kafka_sink('se19_sink', 'se19.evs', 'localhost:9', 'out');
RESET ROLE;
SET ROLE owner_r;
INSERT INTO se19.evs VALUES ('a');
REVOKE SELECT ON se19.evs FROM reader_r;
INSERT INTO se19.evs VALUES ('b');
COPY se19.evs (k) FROM stdin;
c
\.
SELECT count(*) FROM se19.evs;
RESET ROLE;
-- the sink stopped queuing, visibly
SELECT q.payload FROM stream_ext.sink_queue q
  JOIN stream_ext.kafka_sinks s ON s.id = q.sink WHERE s.name = 'se19_sink';
SELECT sink, state, last_error FROM stream_ext.sink_status WHERE sink = 'se19_sink';
-- a failed sink queues nothing until its owner starts it again
GRANT SELECT ON se19.evs TO reader_r;
INSERT INTO se19.evs VALUES ('d');
SELECT count(*) AS queued FROM stream_ext.sink_queue q
  JOIN stream_ext.kafka_sinks s ON s.id = q.sink WHERE s.name = 'se19_sink';
-- others cannot drop it; the stream's owner can stop and drop it
SET ROLE other_r;
SELECT stream_ext.drop_sink('se19_sink');
RESET ROLE;
SET ROLE owner_r;
SELECT stream_ext.stop_sink('se19_sink');
SELECT stream_ext.drop_sink('se19_sink');
RESET ROLE;
SELECT count(*) AS sinks FROM stream_ext.kafka_sinks WHERE name = 'se19_sink';

SET client_min_messages = warning;
DROP SCHEMA se19_r CASCADE;
DROP SCHEMA se19 CASCADE;
RESET client_min_messages;
DROP ROLE owner_r;
DROP ROLE reader_r;
DROP ROLE other_r;
SELECT count(*) AS invalid FROM stream_ext.invalid_objects;
