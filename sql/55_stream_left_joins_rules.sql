-- LEFT JOIN of two streams (query/sjoin_left.c, docs/joins.md): the
-- example of the docs step by step (when NULL rows appear, refused late
-- pairs, late rows of the first stream), what is refused, retention
-- checks, privileges at every batch of either stream, explain.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
SET TimeZone = 'UTC';

-- ---- the example of docs/joins.md ------------------------------------------
SELECT stream_ext.create_stream('orders', 'k int, qty int, ts timestamptz');
SELECT stream_ext.create_stream('ships',  'k int, w int, ts timestamptz');
CREATE VIEW orders_shipped WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT o.k, count(*) AS rows, count(s.w) AS shipments
    FROM orders o LEFT JOIN ships s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
   GROUP BY o.k;
-- a transform: each pair once, and each order without a shipment once its
-- window has closed (no allowed_lateness: the watermark is the newest time)
CREATE VIEW order_events WITH (continuous) AS
  SELECT o.k, o.qty, s.w, o.ts AS ots, s.ts AS sts
    FROM orders o LEFT JOIN ships s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes';
INSERT INTO orders VALUES (1, 10, '2024-01-01 10:00'), (2, 20, '2024-01-01 10:00');
INSERT INTO ships VALUES (1, 7, '2024-01-01 10:02');
-- order 1 has its shipment; order 2's window is open until the watermark
-- passes 10:05
SELECT * FROM orders_shipped ORDER BY k;
SELECT max_time, max_time - allowed_lateness AS watermark, late_pairs
  FROM stream_ext.stream_left_joins WHERE object = 'orders_shipped'::regclass;
INSERT INTO ships VALUES (3, 1, '2024-01-01 10:06');
-- watermark 10:05: not past 10:05 yet
SELECT * FROM orders_shipped ORDER BY k;
INSERT INTO ships VALUES (3, 1, '2024-01-01 10:07');
-- watermark 10:06: order 2 closed without a shipment, its NULL row counts
SELECT * FROM orders_shipped ORDER BY k;
-- a shipment for order 2 that comes too late: the pair is refused and
-- counted, the view keeps the NULL row
INSERT INTO ships VALUES (2, 9, '2024-01-01 10:03');
SELECT * FROM orders_shipped ORDER BY k;
SELECT late_pairs FROM stream_ext.stream_left_joins WHERE object = 'orders_shipped'::regclass;
-- a late shipment pairs an order still open (10:05 + 5 min >= 10:06)
INSERT INTO orders VALUES (5, 50, '2024-01-01 10:05');
INSERT INTO ships VALUES (5, 3, '2024-01-01 10:04');
-- a late order (closed when it arrives): its NULL row at once; its pair
-- with a shipment already there counts
INSERT INTO orders VALUES (4, 40, '2024-01-01 09:00'), (3, 30, '2024-01-01 10:03');
-- an order without a time: never matched, its NULL row at once
INSERT INTO orders VALUES (6, 60, NULL);
SELECT * FROM orders_shipped ORDER BY k;
-- the same as the query of docs/joins.md, with the refused pair taken out
SELECT o.k, count(*) AS rows, count(s.w) AS shipments
  FROM orders o LEFT JOIN ships s
    ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
   AND NOT (o.k = 2 AND s.ts = '2024-01-01 10:03')
 WHERE s.ts IS NOT NULL OR o.ts IS NULL
    OR o.ts + interval '5 minutes' < (SELECT max_time - allowed_lateness FROM stream_ext.stream_left_joins
                                       WHERE object = 'orders_shipped'::regclass)
 GROUP BY o.k ORDER BY o.k;
-- the transform's rows: order 2's NULL row came at 10:06 there
SELECT * FROM order_events ORDER BY k, sts;
SELECT object, max_time - allowed_lateness AS watermark, late_pairs
  FROM stream_ext.stream_left_joins ORDER BY object::text;
-- stream_ext.explain() binds the watermark
SELECT line FROM stream_ext.explain('orders_shipped') AS line WHERE line LIKE 'Watermark%';
-- a batch of the second stream with NULL times only: the watermark stays
INSERT INTO ships VALUES (1, 1, NULL);
SELECT max_time FROM stream_ext.stream_left_joins WHERE object = 'orders_shipped'::regclass;

-- ---- what is refused (0A000), creating nothing ------------------------------
-- allowed_lateness in a transform (its watermark is the newest time itself)
CREATE VIEW lr_bad WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT o.k, s.w FROM orders o LEFT JOIN ships s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes';
-- the window in WHERE, not in ON
CREATE VIEW lr_bad WITH (continuous) AS
  SELECT o.k, count(*) FROM orders o LEFT JOIN ships s ON o.k = s.k
   WHERE s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes' GROUP BY o.k;
-- RIGHT, FULL (the first stream in FROM is the one whose rows are kept)
CREATE VIEW lr_bad WITH (continuous) AS
  SELECT count(*) FROM orders o RIGHT JOIN ships s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes';
CREATE VIEW lr_bad WITH (continuous) AS
  SELECT count(*) FROM orders o FULL JOIN ships s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes';
-- a table joined too
CREATE TABLE customers (id int, name text);
CREATE VIEW lr_bad WITH (continuous) AS
  SELECT c.name, count(*) FROM orders o LEFT JOIN ships s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
    JOIN customers c ON c.id = o.k GROUP BY c.name;
-- time columns that are not timestamptz
SELECT stream_ext.create_stream('lr_local', 'k int, ts timestamp');
CREATE VIEW lr_bad WITH (continuous) AS
  SELECT count(*) FROM lr_local l LEFT JOIN ships s
      ON l.k = s.k AND s.ts BETWEEN l.ts - interval '5 minutes' AND l.ts + interval '5 minutes';
-- emit
SELECT stream_ext.create_stream('lr_out', 'k int, n bigint');
CREATE VIEW lr_bad WITH (continuous, emit = 'on_close', output_stream = 'lr_out') AS
  SELECT o.k, count(*) AS n FROM orders o LEFT JOIN ships s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
   GROUP BY o.k;
-- allowed_lateness stays refused for an inner join of two streams
CREATE VIEW lr_bad WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT o.k, count(*) AS n FROM orders o JOIN ships s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
   GROUP BY o.k;
SELECT count(*) AS bad_objects FROM pg_class WHERE relname LIKE 'lr_bad%';

-- ---- retention: the window plus allowed_lateness ----------------------------
SELECT stream_ext.create_stream('lr_b', 'k int, ts timestamptz');
SELECT stream_ext.set_retention('lr_b', '10 minutes');
-- 5 minutes + 6 minutes > 10 minutes
CREATE VIEW lr_bad WITH (continuous, allowed_lateness = '6 minutes') AS
  SELECT count(*) AS n FROM orders o LEFT JOIN lr_b b
      ON o.k = b.k AND b.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes';
-- 5 + 5 = 10: fine; lowering lr_b's retention below it is refused
CREATE VIEW lr_ok WITH (continuous, allowed_lateness = '5 minutes') AS
  SELECT count(*) AS n, count(b.k) AS matched FROM orders o LEFT JOIN lr_b b
      ON o.k = b.k AND b.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes';
SELECT stream_ext.set_retention('lr_b', '9 minutes');
SELECT stream_ext.set_retention('lr_b', '1 hour');
-- backfilled from the orders already there: the watermark of lr_b is none
-- yet, so only orders without a time have their NULL row
SELECT n, matched FROM lr_ok;

-- ---- privileges: the owner's, on both streams, at every batch --------------
CREATE ROLE lr_owner;
GRANT CREATE ON SCHEMA public TO lr_owner;
GRANT SELECT ON orders, lr_b TO lr_owner;
SET ROLE lr_owner;
CREATE VIEW lr_priv WITH (continuous) AS
  SELECT count(*) AS n, count(b.k) AS matched FROM orders o LEFT JOIN lr_b b
      ON o.k = b.k AND b.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute';
RESET ROLE;
INSERT INTO lr_b VALUES (1, '2024-01-01 10:00');
SELECT * FROM lr_priv;
-- the owner loses SELECT on the first stream: a batch of the second marks
-- the view invalid (it would read the first to pair and to close), the
-- insert goes on
REVOKE SELECT ON orders FROM lr_owner;
INSERT INTO lr_b VALUES (1, '2024-01-01 11:00');
SELECT object, kind, reason FROM stream_ext.invalid_objects WHERE object = 'lr_priv'::regclass;
SELECT count(*) AS rows_kept FROM lr_b;
DROP VIEW lr_priv;
-- and the other way round: SELECT on the second stream, lost, seen by a
-- batch of the first
GRANT SELECT ON orders TO lr_owner;
SET ROLE lr_owner;
CREATE VIEW lr_priv WITH (continuous) AS
  SELECT count(*) AS n FROM orders o LEFT JOIN lr_b b
      ON o.k = b.k AND b.ts BETWEEN o.ts - interval '1 minute' AND o.ts + interval '1 minute';
RESET ROLE;
REVOKE SELECT ON lr_b FROM lr_owner;
INSERT INTO orders VALUES (1, 1, '2024-01-01 11:00');
SELECT object, kind, reason FROM stream_ext.invalid_objects WHERE object = 'lr_priv'::regclass;
DROP VIEW lr_priv;
REVOKE ALL ON orders, lr_b FROM lr_owner;
REVOKE CREATE ON SCHEMA public FROM lr_owner;
DROP ROLE lr_owner;

-- ---- DROP: the catalog rows go with the view --------------------------------
DROP VIEW orders_shipped, order_events, lr_ok;
SELECT count(*) AS join_rows FROM stream_ext.stream_joins;
SELECT count(*) AS left_rows FROM stream_ext.stream_left_joins;
INSERT INTO ships VALUES (1, 1, now());
INSERT INTO orders VALUES (1, 1, now());

-- ---- CREATE OR REPLACE keeps the second stream's trigger --------------------
-- (the only join on that stream: it was taken for unused and dropped)
SELECT stream_ext.create_stream('lr_o', 'k int, ts timestamptz');
SELECT stream_ext.create_stream('lr_s', 'k int, ts timestamptz');
CREATE VIEW lr_repl WITH (continuous) AS
  SELECT o.k, count(*) AS n, count(s.k) AS m FROM lr_o o LEFT JOIN lr_s s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
   GROUP BY o.k;
CREATE OR REPLACE VIEW lr_repl WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT o.k, count(*) AS n, count(s.k) AS m FROM lr_o o LEFT JOIN lr_s s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
   GROUP BY o.k;
SELECT count(*) AS second_stream_triggers FROM pg_trigger
 WHERE tgrelid = 'lr_s'::regclass AND tgname = 'stream_ext_maintain';
SELECT allowed_lateness FROM stream_ext.stream_left_joins WHERE object = 'lr_repl'::regclass;
INSERT INTO lr_o VALUES (1, '2024-01-01 10:00'), (2, '2024-01-01 10:00');
INSERT INTO lr_s VALUES (1, '2024-01-01 10:01'), (3, '2024-01-01 10:07');
TABLE lr_repl ORDER BY k;
-- an inner join replacing it, the same
CREATE OR REPLACE VIEW lr_repl WITH (continuous) AS
  SELECT o.k, count(*) AS n, count(s.k) AS m FROM lr_o o JOIN lr_s s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
   GROUP BY o.k;
SELECT count(*) AS left_rows FROM stream_ext.stream_left_joins WHERE object = 'lr_repl'::regclass;
INSERT INTO lr_s VALUES (2, '2024-01-01 10:02');
TABLE lr_repl ORDER BY k;
DROP VIEW lr_repl;

-- ---- a continuous view over a join view --------------------------------------
-- fed by the join view's delta, not by the streams: inserts into the first
-- stream ran its statement in the streams' trigger and failed
CREATE VIEW lr_up WITH (continuous) AS
  SELECT o.k, count(*) AS n, count(s.k) AS m FROM lr_o o LEFT JOIN lr_s s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
   GROUP BY o.k;
CREATE VIEW lr_up_inner WITH (continuous) AS
  SELECT o.k, count(*) AS n FROM lr_o o JOIN lr_s s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'
   GROUP BY o.k;
CREATE VIEW lr_total WITH (continuous) AS SELECT sum(n) AS n, sum(m) AS m FROM lr_up;
CREATE VIEW lr_total_inner WITH (continuous) AS SELECT sum(n) AS n FROM lr_up_inner;
SELECT count(*) AS rollup_join_rows FROM stream_ext.stream_joins
 WHERE object IN ('lr_total'::regclass, 'lr_total_inner'::regclass);
INSERT INTO lr_o VALUES (5, '2024-01-01 10:00'), (6, '2024-01-01 10:00');
INSERT INTO lr_s VALUES (5, '2024-01-01 10:01'), (9, '2024-01-01 10:30');
SELECT (SELECT row(sum(n), sum(m)) FROM lr_up) IS NOT DISTINCT FROM (SELECT row(n, m) FROM lr_total) AS rollup_ok,
       (SELECT sum(n) FROM lr_up_inner) IS NOT DISTINCT FROM (SELECT n FROM lr_total_inner) AS rollup_inner_ok,
       (SELECT n FROM lr_total) > 0 AS counted;
DROP VIEW lr_total, lr_total_inner, lr_up, lr_up_inner;
