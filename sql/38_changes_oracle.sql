-- Oracle of change streams (docs/changes.md): replaying a view's change
-- stream -- the last new row per key, deleted keys left out -- gives the
-- view; the old row of each change is the new row of the previous change of
-- its key; across batch sizes 1 .. 10,000, NULL keys, rolled-back batches,
-- count(DISTINCT) and HAVING.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA chgo;
SET search_path = chgo, public;

SELECT stream_ext.create_stream('chgo.ev', 'a int, b text, v int');
CREATE VIEW g2 WITH (continuous, changes = true) AS
  SELECT a, b, count(*) AS n, sum(v) AS s, max(v) AS mx, count(DISTINCT v) AS nd
    FROM ev GROUP BY a, b;
CREATE VIEW big WITH (continuous, changes = true) AS
  SELECT a, sum(v) AS s FROM ev GROUP BY a HAVING sum(v) % 3 <> 0;
CREATE VIEW dn WITH (continuous, changes = true) AS
  SELECT a, count(DISTINCT b) AS nb, min(b) AS lo FROM ev GROUP BY a;
CREATE VIEW one WITH (continuous, changes = true) AS
  SELECT count(*) AS n, avg(v) AS av FROM ev WHERE v > 10;

-- both ways of storing a batch: views that append to a delta, views that upsert
SELECT view, delta IS NOT NULL AS appends FROM stream_ext.view_catalog
 WHERE view IN ('chgo.g2'::regclass, 'chgo.big', 'chgo.dn', 'chgo.one') ORDER BY view::text;

-- batches of 1 .. 10,000 rows over 50 x 4 groups (NULL in either key);
-- every third batch of the small ones rolled back in a subtransaction
SELECT setseed(0.38);
DO $$
DECLARE
  size int;
  i int;
BEGIN
  FOREACH size IN ARRAY ARRAY[1, 1, 2, 3, 7, 10, 50, 100, 1000, 10000, 1, 5] LOOP
    FOR i IN 1 .. 3 LOOP
      BEGIN
        INSERT INTO chgo.ev
          SELECT CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 50)::int END,
                 CASE WHEN random() < 0.05 THEN NULL ELSE 'b' || (random() * 3)::int END,
                 (random() * 20)::int - 5
            FROM generate_series(1, size);
        IF size < 100 AND i = 3 THEN
          RAISE EXCEPTION 'roll back';
        END IF;
      EXCEPTION WHEN raise_exception THEN
        NULL;
      END;
    END LOOP;
  END LOOP;
END $$;

-- replay equals the view (NULL keys compared as values)
CREATE FUNCTION chgo.diff(view_sql text, replay_sql text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE d bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((%s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL %s)) x',
                 view_sql, replay_sql, replay_sql, view_sql) INTO d;
  RETURN d;
END $$;
SELECT chgo.diff(
  'SELECT a, b, n, s, mx, nd FROM chgo.g2',
  'SELECT a, b, new_n, new_s, new_mx, new_nd FROM (SELECT DISTINCT ON (a, b) * FROM chgo.g2_changes ORDER BY a, b, change_seq DESC) l WHERE change_op <> ''delete''') AS g2_diff;
SELECT chgo.diff(
  'SELECT a, s FROM chgo.big',
  'SELECT a, new_s FROM (SELECT DISTINCT ON (a) * FROM chgo.big_changes ORDER BY a, change_seq DESC) l WHERE change_op <> ''delete''') AS big_diff;
SELECT chgo.diff(
  'SELECT a, nb, lo FROM chgo.dn',
  'SELECT a, new_nb, new_lo FROM (SELECT DISTINCT ON (a) * FROM chgo.dn_changes ORDER BY a, change_seq DESC) l WHERE change_op <> ''delete''') AS dn_diff;
SELECT chgo.diff(
  'SELECT n, av FROM chgo.one',
  'SELECT new_n, new_av FROM (SELECT * FROM chgo.one_changes ORDER BY change_seq DESC LIMIT 1) l') AS one_diff;

-- each change's old row is its key's previous new row; the first has none
SELECT count(*) AS broken_chains FROM (
  SELECT change_op, old_n, old_s, old_mx, old_nd,
         lag(ROW(new_n, new_s, new_mx, new_nd)::text) OVER w AS prev,
         lag(change_op) OVER w AS prev_op,
         row_number() OVER w AS nth
    FROM g2_changes WINDOW w AS (PARTITION BY a, b ORDER BY change_seq)) c
 WHERE (nth = 1 AND change_op <> 'insert')
    OR (nth > 1 AND change_op = 'insert' AND prev_op <> 'delete')
    OR (nth > 1 AND change_op <> 'insert' AND ROW(old_n, old_s, old_mx, old_nd)::text IS DISTINCT FROM prev);
SELECT count(*) AS broken_chains FROM (
  SELECT change_op, old_s, lag(new_s) OVER w AS prev, lag(change_op) OVER w AS prev_op,
         row_number() OVER w AS nth
    FROM big_changes WINDOW w AS (PARTITION BY a ORDER BY change_seq)) c
 WHERE (nth = 1 AND change_op <> 'insert')
    OR (change_op = 'insert' AND nth > 1 AND prev_op <> 'delete')
    OR (change_op <> 'insert' AND old_s IS DISTINCT FROM prev);

-- the rows are real: some of each kind, NULL keys among them, no change
-- without a difference, one change_seq per batch and view (36 batches, 9
-- of them rolled back)
SELECT change_op, count(*) > 0 AS some FROM g2_changes GROUP BY change_op ORDER BY 1;
SELECT change_op, count(*) > 0 AS some FROM big_changes GROUP BY change_op ORDER BY 1;
SELECT count(*) > 0 AS null_keys FROM g2_changes WHERE a IS NULL OR b IS NULL;
SELECT count(*) AS no_op_changes FROM g2_changes
 WHERE ROW(old_n, old_s, old_mx, old_nd)::text = ROW(new_n, new_s, new_mx, new_nd)::text;
SELECT count(DISTINCT change_seq) AS batches_with_changes FROM g2_changes;
