-- A continuous view's change stream (docs/changes.md): changes = true at
-- CREATE and through ALTER VIEW, old and new rows per touched group and
-- batch, deletions (HAVING, TTL), rollback, NULL keys, privileges.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA chg;
SET search_path = chg, public;

SELECT stream_ext.create_stream('chg.clicks', 'url text, ms int');
INSERT INTO clicks VALUES ('/a', 10);   -- before the view: backfilled

-- docs/changes.md: the first example
CREATE VIEW hits WITH (continuous, changes = true) AS
  SELECT url, count(*) AS n, sum(ms) AS total_ms FROM clicks GROUP BY url;
SELECT stream_ext.changes('hits');
\d hits_changes
-- the backfilled group comes first, as an insert
SELECT change_op, url, old_n, new_n, new_total_ms FROM hits_changes ORDER BY change_seq, url;

INSERT INTO clicks VALUES ('/a', 5), ('/b', 7), ('/b', 1);
INSERT INTO clicks VALUES ('/b', 2);
SELECT change_seq > 0 AS seq, change_op, url, old_n, new_n, old_total_ms, new_total_ms
  FROM hits_changes ORDER BY change_seq, url;

-- a rolled-back batch emits nothing
BEGIN;
INSERT INTO clicks VALUES ('/c', 1);
SELECT count(*) AS in_tx FROM hits_changes WHERE url = '/c';
ROLLBACK;
SELECT count(*) AS after_rollback FROM hits_changes WHERE url = '/c';
-- a rolled-back savepoint too
BEGIN;
SAVEPOINT s;
INSERT INTO clicks VALUES ('/d', 1);
ROLLBACK TO SAVEPOINT s;
INSERT INTO clicks VALUES ('/e', 1);
COMMIT;
SELECT change_op, url FROM hits_changes WHERE url IN ('/d', '/e');

-- NULL keys are groups like any other
INSERT INTO clicks VALUES (NULL, 3);
INSERT INTO clicks VALUES (NULL, 4);
SELECT change_op, url, old_n, new_n FROM hits_changes WHERE url IS NULL ORDER BY change_seq;

-- the change stream is a stream: views over it
CREATE VIEW hits_total WITH (continuous) AS
  SELECT count(*) AS changes, sum(new_n - coalesce(old_n, 0)) AS rows FROM hits_changes;
INSERT INTO clicks VALUES ('/a', 1), ('/f', 1);
SELECT * FROM hits_total;
SELECT sum(n) AS rows_since FROM hits WHERE url IN ('/a', '/f');

-- replay: last new row per key, minus deletions, equals the view
CREATE FUNCTION chg.replayed() RETURNS TABLE (url text, n bigint, total_ms bigint) LANGUAGE sql AS $$
  SELECT DISTINCT ON (c.url) c.url, c.new_n, c.new_total_ms FROM chg.hits_changes c
   ORDER BY c.url, c.change_seq DESC $$;
SELECT count(*) AS differences FROM (
  (SELECT * FROM chg.replayed() WHERE n IS NOT NULL EXCEPT ALL SELECT * FROM hits)
  UNION ALL
  (SELECT * FROM hits EXCEPT ALL SELECT * FROM chg.replayed() WHERE n IS NOT NULL)) d;

-- HAVING: a group that leaves the view is a deletion
SELECT stream_ext.create_stream('chg.temps', 'sensor int, t int');
CREATE VIEW low WITH (continuous, changes = true) AS
  SELECT sensor, min(t) AS lowest FROM temps GROUP BY sensor HAVING min(t) > 0;
INSERT INTO temps VALUES (1, 5), (2, 3);
INSERT INTO temps VALUES (1, -1), (2, 1);
SELECT change_op, sensor, old_lowest, new_lowest FROM low_changes ORDER BY change_seq, sensor;
-- a batch that changes no row emits nothing
INSERT INTO temps VALUES (2, 9);
SELECT count(*) FROM low_changes;

-- no GROUP BY: one row
CREATE VIEW total WITH (continuous, changes = true) AS SELECT count(*) AS n FROM temps;
INSERT INTO temps VALUES (3, 3);
SELECT change_op, old_n, new_n FROM total_changes ORDER BY change_seq;

-- ALTER VIEW: on (the current rows as inserts), off (the stream goes)
ALTER VIEW total SET (changes = false);
SELECT to_regclass('chg.total_changes') IS NULL AS gone;
ALTER VIEW total SET (changes = true);
SELECT change_op, old_n, new_n FROM total_changes;
ALTER VIEW total RESET (changes);
SELECT count(*) FROM stream_ext.change_streams WHERE view = 'chg.total'::regclass;

-- TTL: expired groups are deletions
SELECT stream_ext.create_stream('chg.ev', 'k int, ts timestamptz');
CREATE VIEW daily WITH (continuous, changes = true, ttl = '2 days', ttl_column = 'day') AS
  SELECT k, date_trunc('day', ts) AS day, count(*) AS n FROM ev GROUP BY 1, 2;
INSERT INTO ev VALUES (1, now() - interval '10 days'), (2, now());
SELECT task, removed FROM stream_ext.run_maintenance() WHERE object = 'chg.daily'::regclass AND task = 'ttl';
SELECT change_op, k, old_n, new_n FROM daily_changes ORDER BY change_seq, k;

-- refused: what the change stream cannot follow, and replacing
CREATE VIEW sess WITH (continuous, changes = true, session_gap = '1 minute', time_column = 'ts') AS
  SELECT k, count(*) FROM ev GROUP BY k;
CREATE VIEW hidden_key WITH (continuous, changes = true) AS SELECT count(*) FROM ev GROUP BY k;
CREATE VIEW tr WITH (continuous, changes = true) AS SELECT k FROM ev;
CREATE OR REPLACE VIEW hits WITH (continuous) AS SELECT url, count(*) AS n FROM clicks GROUP BY url;
SELECT stream_ext.changes('hits_total');
DROP TABLE hits_changes;

-- DROP VIEW takes the change stream along (with CASCADE for what reads it)
DROP VIEW hits CASCADE;
SELECT to_regclass('chg.hits_changes') IS NULL AS gone;

-- tumbling windows: the window is the key
SELECT stream_ext.create_stream('chg.pings', 'host text, ts timestamptz');
CREATE VIEW per_min WITH (continuous, changes = true) AS
  SELECT host, stream_ext.tumble(ts, '1 minute') AS minute, count(*) AS n FROM pings GROUP BY host, minute;
INSERT INTO pings VALUES ('h', '2026-01-01 00:00:10+00'), ('h', '2026-01-01 00:01:10+00');
INSERT INTO pings VALUES ('h', '2026-01-01 00:01:20+00');
SELECT change_op, host, minute AT TIME ZONE 'UTC' AS minute, old_n, new_n FROM per_min_changes ORDER BY change_seq, minute;

-- privileges: the change stream is the view owner's; SELECT follows the
-- view's grants at creation; a role without them reads nothing
SET client_min_messages = warning;
DROP ROLE IF EXISTS chg_owner;
DROP ROLE IF EXISTS chg_reader;
DROP ROLE IF EXISTS chg_other;
RESET client_min_messages;
CREATE ROLE chg_owner;
CREATE ROLE chg_reader;
CREATE ROLE chg_other;
GRANT USAGE, CREATE ON SCHEMA chg TO chg_owner;
GRANT USAGE ON SCHEMA chg TO chg_reader, chg_other;
SELECT stream_ext.create_stream('chg.orders', 'item text, qty int');
ALTER TABLE orders OWNER TO chg_owner;
SET ROLE chg_owner;
CREATE VIEW sold WITH (continuous) AS SELECT item, sum(qty) AS qty FROM orders GROUP BY item;
GRANT SELECT ON sold TO chg_reader;
ALTER VIEW sold SET (changes = true);
RESET ROLE;
SELECT relname, pg_get_userbyid(relowner) AS owner FROM pg_class WHERE oid = stream_ext.changes('chg.sold');
INSERT INTO orders VALUES ('x', 2);
SET ROLE chg_reader;
SELECT change_op, item, old_qty, new_qty FROM sold_changes ORDER BY change_seq;
RESET ROLE;
SET ROLE chg_other;
SELECT count(*) FROM sold_changes;
-- nor through a continuous view of its own
CREATE VIEW spy WITH (continuous) AS SELECT item, count(*) FROM sold_changes GROUP BY item;
RESET ROLE;
-- later GRANT and REVOKE of SELECT on the view are followed
SET ROLE chg_owner;
GRANT SELECT ON sold TO chg_other;
REVOKE SELECT ON sold FROM chg_reader;
RESET ROLE;
SELECT grantee, privilege_type FROM information_schema.role_table_grants
 WHERE table_name = 'sold_changes' AND grantee LIKE 'chg_%' ORDER BY 1, 2;
SET ROLE chg_other;
SELECT count(*) AS other_reads FROM sold_changes;
RESET ROLE;
SET ROLE chg_reader;
SELECT count(*) FROM sold_changes;
RESET ROLE;
-- ALTER VIEW is the owner's
SET ROLE chg_reader;
ALTER VIEW sold SET (changes = false);
RESET ROLE;
-- the owner loses SELECT on its stream: the view is no longer maintained,
-- and its change stream gets nothing
REVOKE SELECT ON orders FROM chg_owner;
INSERT INTO orders VALUES ('x', 3);
SELECT count(*) AS changes FROM sold_changes;
GRANT SELECT ON orders TO chg_owner;
DROP VIEW sold;
DROP TABLE orders;
DROP OWNED BY chg_owner, chg_reader, chg_other;
DROP ROLE chg_owner, chg_reader, chg_other;

-- NOTIFY per change: an ordinary trigger on the change stream (docs/changes.md)
CREATE FUNCTION chg.notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE payload text;
BEGIN
  FOR payload IN SELECT json_build_object('op', n.change_op, 'sensor', n.sensor, 'lowest', n.new_lowest)::text
                   FROM new_rows n ORDER BY n.sensor LOOP
    PERFORM pg_notify('low_changes', payload);
    RAISE NOTICE 'notified %', payload;   -- what LISTEN low_changes receives
  END LOOP;
  RETURN NULL;
END $$;
CREATE TRIGGER notify_change AFTER INSERT ON low_changes
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chg.notify_change();
INSERT INTO temps VALUES (5, 50), (6, -6);

-- partial states: each change of a batch carries the batch's partial state
-- of every aggregate (batch_<state column>); merged per key they give the
-- view's values (the rows of the initial snapshot have none: start empty)
SELECT stream_ext.create_stream('chg.m', 'k int, v int');
CREATE VIEW mv WITH (continuous, changes = true) AS
  SELECT k, count(*) AS n, avg(v) AS av, max(v) AS hi FROM m GROUP BY k;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'chg.mv_changes'::regclass AND attname LIKE 'batch_%' ORDER BY attnum;
INSERT INTO m SELECT i % 3, i FROM generate_series(1, 10) i;
INSERT INTO m SELECT i % 4, i * 10 FROM generate_series(1, 8) i;
INSERT INTO m VALUES (1, 1);   -- max and count change, avg too
SELECT k, count(*) AS changes, count(batch_state_count_1) AS with_states FROM mv_changes GROUP BY k ORDER BY k;
CREATE VIEW mv_combined AS
SELECT c.k,
       stream_ext.finalize(stream_ext.merge_states(c.batch_state_count_1, 'count()'), 'count()', NULL::bigint) AS n,
       stream_ext.finalize(stream_ext.merge_states(c.batch_state_avg_2, 'avg(int4)'), 'avg(int4)', NULL::numeric) AS av,
       stream_ext.finalize(stream_ext.merge_states(c.batch_state_max_3, 'max(int4)'), 'max(int4)', NULL::int) AS hi
  FROM mv_changes c GROUP BY c.k;
SELECT count(*) AS differences FROM ((TABLE mv_combined EXCEPT ALL TABLE mv)
                                     UNION ALL (TABLE mv EXCEPT ALL TABLE mv_combined)) d;
SELECT count(*) AS groups FROM mv_combined;
