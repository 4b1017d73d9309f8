-- Stream-table joins.  Each batch is joined to the tables as they are when
-- it is maintained; a later change to a table does not rewrite what was
-- already aggregated.  The oracle therefore logs, in the inserting
-- transaction, the batch joined to the table at that moment (jn_log), and
-- every view must equal its plain query over that log -- which, while the
-- table does not change, is the plain join over all committed stream rows.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

SELECT stream_ext.create_stream('jn_clicks', 'url text, user_id int, v numeric, ts timestamptz');
CREATE TABLE jn_users (id int, country text, tier int);
-- id 5 twice (a click of user 5 counts twice, as in plain SQL), a NULL id,
-- a NULL country; users 8 and up do not exist
INSERT INTO jn_users VALUES (1, 'fr', 1), (2, 'de', 2), (3, 'fr', 3), (4, NULL, 1),
  (5, 'it', 2), (5, 'it', 3), (6, 'es', NULL), (7, 'de', 1), (NULL, 'xx', 9);

-- the committed stream rows, and each batch joined at its time
CREATE TABLE jn_all (url text, user_id int, v numeric, ts timestamptz);
CREATE TABLE jn_log (url text, user_id int, v numeric, ts timestamptz,
                     uid int, country text, tier int, seed int);
CREATE TEMP TABLE jn_batch (url text, user_id int, v numeric, ts timestamptz);
CREATE FUNCTION pg_temp.ins(n int, seed int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM jn_batch;
  INSERT INTO jn_batch
    SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE 'u' || ((i + seed) % 4) END,
           CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 7 + seed) % 10 END,
           CASE WHEN i % 17 = 0 THEN NULL ELSE (i % 100) / 4.0 END,
           timestamptz '2024-01-01 00:00:00+00' + ((i + seed) % 600) * interval '1 second'
      FROM generate_series(1, n) i;
  INSERT INTO jn_clicks (url, user_id, v, ts) SELECT * FROM jn_batch;
  INSERT INTO jn_all SELECT * FROM jn_batch;
  INSERT INTO jn_log
    SELECT b.*, u.id, u.country, u.tier, seed FROM jn_batch b LEFT JOIN jn_users u ON u.id = b.user_id;
END $$;

-- a view created over rows already in the stream starts from them
SELECT pg_temp.ins(300, 0);

CREATE VIEW jn_inner WITH (continuous) AS
  SELECT u.country, count(*) AS n, sum(c.v) AS s, avg(c.v) AS a, min(c.url) AS first_url,
         max(u.tier) AS top_tier, count(DISTINCT c.url) AS urls
    FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id
   GROUP BY u.country;
CREATE VIEW jn_left WITH (continuous) AS
  SELECT u.tier, c.url, count(*) AS n, count(u.id) AS matched, sum(c.v) AS s
    FROM jn_clicks c LEFT JOIN jn_users u ON u.id = c.user_id
   GROUP BY u.tier, c.url HAVING count(*) > 1;
-- USING, a comma join, keyless, a filter over both sides, a tumbling window
CREATE VIEW jn_using WITH (continuous) AS
  SELECT country, count(*) AS n FROM jn_clicks c JOIN (jn_users u JOIN jn_users u2 USING (id, country)) ON u.id = c.user_id
   GROUP BY country;
CREATE VIEW jn_keyless WITH (continuous) AS
  SELECT count(*) AS n, sum(u.tier) AS tiers FROM jn_clicks c, jn_users u
   WHERE u.id = c.user_id AND c.v > 10 AND u.tier < 3;
CREATE VIEW jn_tumble WITH (continuous) AS
  SELECT stream_ext.tumble(c.ts, '5 minutes') AS w, u.tier, count(*) AS n, sum(c.v) AS s
    FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id GROUP BY 1, 2;
-- three relations, and NATURAL
CREATE TABLE jn_countries (code text, name text);
INSERT INTO jn_countries VALUES ('fr', 'France'), ('de', 'Germany'), ('it', 'Italy');
CREATE TABLE jn_nicks (user_id int, nick text);
INSERT INTO jn_nicks VALUES (1, 'one'), (2, 'two'), (2, 'deux'), (3, NULL);
CREATE VIEW jn_three WITH (continuous) AS
  SELECT k.name, u.tier, count(*) AS n, sum(c.v) AS s
    FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id LEFT JOIN jn_countries k ON k.code = u.country
   GROUP BY 1, 2;
CREATE VIEW jn_nat WITH (continuous) AS
  SELECT nick, count(*) AS n, max(v) AS mx FROM jn_clicks NATURAL JOIN jn_nicks GROUP BY nick;
-- transforms: into a table, and into a stream feeding an aggregate view
CREATE VIEW jn_enriched WITH (continuous) AS
  SELECT c.url, c.user_id, u.country FROM jn_clicks c LEFT JOIN jn_users u ON u.id = c.user_id;
SELECT stream_ext.create_stream('jn_out', 'url text, country text');
CREATE VIEW jn_route WITH (continuous, output_stream = 'jn_out') AS
  SELECT c.url, upper(u.country) AS country FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id
   WHERE u.tier = 1;
CREATE VIEW jn_route_counts WITH (continuous) AS
  SELECT country, url, count(*) AS n FROM jn_out GROUP BY country, url;

SELECT name, source FROM stream_ext.continuous_views WHERE name::text LIKE 'jn%' ORDER BY 1;

-- the plain queries over the log; jn_out only gets rows of batches after
-- jn_route was created (a transform into a stream does not replay)
CREATE FUNCTION pg_temp.check(label text) RETURNS TABLE (what text, diff bigint) LANGUAGE sql AS $$
  WITH inner_log AS (SELECT * FROM jn_log WHERE uid IS NOT NULL),
  e_inner AS (SELECT country, count(*) AS n, sum(v) AS s, avg(v) AS a, min(url) AS first_url,
                     max(tier) AS top_tier, count(DISTINCT url) AS urls
                FROM inner_log GROUP BY country),
  e_left AS (SELECT tier, url, count(*) AS n, count(uid) AS matched, sum(v) AS s
               FROM jn_log GROUP BY tier, url HAVING count(*) > 1),
  e_keyless AS (SELECT count(*) AS n, sum(tier) AS tiers FROM inner_log WHERE v > 10 AND tier < 3),
  e_tumble AS (SELECT stream_ext.tumble(ts, '5 minutes') AS w, tier, count(*) AS n, sum(v) AS s
                 FROM inner_log GROUP BY 1, 2),
  e_enriched AS (SELECT url, user_id, country FROM jn_log),
  e_route AS (SELECT upper(country) AS country, url, count(*) AS n FROM inner_log
               WHERE seed > 0 AND tier = 1 GROUP BY 1, 2)
  SELECT label || ' inner', count(*) FROM ((TABLE jn_inner EXCEPT ALL TABLE e_inner)
                                      UNION ALL (TABLE e_inner EXCEPT ALL TABLE jn_inner)) d
  UNION ALL
  SELECT label || ' left', count(*) FROM ((TABLE jn_left EXCEPT ALL TABLE e_left)
                                     UNION ALL (TABLE e_left EXCEPT ALL TABLE jn_left)) d
  UNION ALL
  SELECT label || ' keyless', count(*) FROM ((TABLE jn_keyless EXCEPT ALL TABLE e_keyless)
                                        UNION ALL (TABLE e_keyless EXCEPT ALL TABLE jn_keyless)) d
  UNION ALL
  SELECT label || ' tumble', count(*) FROM ((TABLE jn_tumble EXCEPT ALL TABLE e_tumble)
                                       UNION ALL (TABLE e_tumble EXCEPT ALL TABLE jn_tumble)) d
  UNION ALL
  SELECT label || ' enriched', count(*) FROM ((TABLE jn_enriched EXCEPT ALL TABLE e_enriched)
                                         UNION ALL (TABLE e_enriched EXCEPT ALL TABLE jn_enriched)) d
  UNION ALL
  SELECT label || ' route', count(*) FROM ((TABLE jn_route_counts EXCEPT ALL TABLE e_route)
                                      UNION ALL (TABLE e_route EXCEPT ALL TABLE jn_route_counts)) d
$$;

SELECT * FROM pg_temp.check('backfill');

-- batches of 1 to 10,000 rows, a rollback, a savepoint
SELECT pg_temp.ins(1, 1);
SELECT pg_temp.ins(10000, 2);
SELECT pg_temp.ins(7, 3);
BEGIN;
SELECT pg_temp.ins(500, 4);
ROLLBACK;
BEGIN;
SELECT pg_temp.ins(3, 5);
SAVEPOINT a;
SELECT pg_temp.ins(50, 6);
ROLLBACK TO a;
COMMIT;
SELECT * FROM pg_temp.check('batches');

-- while the table has not changed, that is the plain join over every
-- committed stream row
SELECT count(*) AS inner_diff FROM (
  (SELECT u.country, count(*) AS n, sum(c.v) AS s, avg(c.v) AS a, min(c.url) AS first_url,
          max(u.tier) AS top_tier, count(DISTINCT c.url) AS urls
     FROM jn_all c JOIN jn_users u ON u.id = c.user_id GROUP BY u.country
   EXCEPT ALL TABLE jn_inner)
  UNION ALL
  (TABLE jn_inner EXCEPT ALL
   SELECT u.country, count(*), sum(c.v), avg(c.v), min(c.url), max(u.tier), count(DISTINCT c.url)
     FROM jn_all c JOIN jn_users u ON u.id = c.user_id GROUP BY u.country)) d;
SELECT count(*) AS using_diff FROM (
  (SELECT country, count(*) AS n FROM jn_all c JOIN (jn_users u JOIN jn_users u2 USING (id, country)) ON u.id = c.user_id
    GROUP BY country EXCEPT ALL TABLE jn_using)
  UNION ALL
  (TABLE jn_using EXCEPT ALL
   SELECT country, count(*) FROM jn_all c JOIN (jn_users u JOIN jn_users u2 USING (id, country)) ON u.id = c.user_id
    GROUP BY country)) d;
SELECT count(*) AS three_diff FROM (
  (SELECT k.name, u.tier, count(*) AS n, sum(c.v) AS s
     FROM jn_all c JOIN jn_users u ON u.id = c.user_id LEFT JOIN jn_countries k ON k.code = u.country
    GROUP BY 1, 2 EXCEPT ALL TABLE jn_three)
  UNION ALL
  (TABLE jn_three EXCEPT ALL
   SELECT k.name, u.tier, count(*), sum(c.v)
     FROM jn_all c JOIN jn_users u ON u.id = c.user_id LEFT JOIN jn_countries k ON k.code = u.country
    GROUP BY 1, 2)) d;
SELECT count(*) AS natural_diff FROM (
  (SELECT nick, count(*) AS n, max(v) AS mx FROM jn_all NATURAL JOIN jn_nicks GROUP BY nick
   EXCEPT ALL TABLE jn_nat)
  UNION ALL
  (TABLE jn_nat EXCEPT ALL SELECT nick, count(*), max(v) FROM jn_all NATURAL JOIN jn_nicks GROUP BY nick)) d;
DROP VIEW jn_three, jn_nat;
DROP TABLE jn_countries, jn_nicks;

-- the transform chain (checked above): upper(country) of tier-1 users'
-- clicks since jn_route
SELECT country, sum(n) AS n FROM jn_route_counts GROUP BY country ORDER BY country;

-- history is not rewritten: user 1 moves to 'be', user 8 appears, 5 leaves
SELECT * FROM jn_inner ORDER BY country;
UPDATE jn_users SET country = 'be' WHERE id = 1;
INSERT INTO jn_users VALUES (8, 'nl', 2);
DELETE FROM jn_users WHERE id = 5;
SELECT pg_temp.ins(2000, 7);
SELECT * FROM jn_inner ORDER BY country;
SELECT * FROM pg_temp.check('after table changes');

-- dependencies: the table and the columns read cannot go without CASCADE
ALTER TABLE jn_users DROP COLUMN tier;
DROP TABLE jn_users;
ALTER TABLE jn_users ADD COLUMN note text;
ALTER TABLE jn_users DROP COLUMN note;

-- EXPLAIN shows the join
SELECT line FROM stream_ext.explain('jn_keyless') AS line WHERE line LIKE '%Join%' OR line LIKE '%Scan%' ORDER BY 1;

-- what cannot be joined, refused at CREATE and leaving nothing behind
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT count(*) AS relations_before FROM pg_class \gset
SELECT q, pg_temp.err('CREATE VIEW jn_bad WITH (continuous) AS ' || q) FROM (VALUES
  ('SELECT count(*) FROM jn_clicks c FULL JOIN jn_users u ON u.id = c.user_id'),
  ('SELECT count(*) FROM jn_clicks c RIGHT JOIN jn_users u ON u.id = c.user_id'),
  ('SELECT count(*) FROM jn_users u LEFT JOIN jn_clicks c ON u.id = c.user_id'),
  ('SELECT count(*) FROM jn_users u JOIN jn_clicks c ON u.id = c.user_id'),
  ('SELECT count(*) FROM jn_clicks c JOIN jn_out o ON o.url = c.url'),
  ('SELECT count(*) FROM jn_clicks c JOIN (SELECT * FROM jn_users) u ON u.id = c.user_id'),
  ('SELECT count(*) FROM jn_clicks c JOIN LATERAL (SELECT c.user_id AS id) u ON true'),
  ('SELECT count(*) FROM jn_clicks c JOIN generate_series(1, 3) g ON g = c.user_id'),
  ('SELECT count(*) FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id AND random() < 0.5'),
  ('SELECT count(*) FROM jn_users u JOIN jn_all a ON a.user_id = u.id'),
  ('SELECT c.url FROM jn_users u RIGHT JOIN jn_clicks c ON u.id = c.user_id'),
  ('SELECT c.url FROM jn_clicks c FULL JOIN jn_users u ON u.id = c.user_id')
) AS t(q);
CREATE VIEW jn_bad WITH (continuous, session_gap = '1 minute', time_column = 'ts') AS
  SELECT u.country, count(*) FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id GROUP BY 1;
CREATE VIEW jn_bad WITH (continuous, sliding_window = '1 minute', step = '10 seconds', time_column = 'ts') AS
  SELECT u.country, count(*) FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id GROUP BY 1;
CREATE VIEW jn_bad WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT stream_ext.tumble(c.ts, '1 minute'), count(*) FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id GROUP BY 1;
SELECT count(*) - :relations_before AS relations_left_behind FROM pg_class;

-- privileges: the creator must be able to read the table's columns it uses
CREATE ROLE jn_role;
GRANT USAGE ON SCHEMA public TO jn_role;
GRANT CREATE ON SCHEMA public TO jn_role;
GRANT SELECT ON jn_clicks TO jn_role;
GRANT SELECT (id, country) ON jn_users TO jn_role;
SET ROLE jn_role;
CREATE VIEW jn_priv WITH (continuous) AS
  SELECT u.tier, count(*) FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id GROUP BY 1;
CREATE VIEW jn_priv WITH (continuous) AS
  SELECT u.country, count(*) AS n FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id GROUP BY 1;
RESET ROLE;
-- row-level security on the table applies to the view's owner: the view
-- never shows what its owner cannot read
ALTER TABLE jn_users ENABLE ROW LEVEL SECURITY;
CREATE POLICY jn_only_fr ON jn_users FOR SELECT TO jn_role USING (country = 'fr');
SET ROLE jn_role;
CREATE VIEW jn_rls WITH (continuous) AS
  SELECT u.country, count(*) AS n FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id GROUP BY 1;
RESET ROLE;
SELECT pg_temp.ins(500, 8);
SET ROLE jn_role;
SELECT count(*) AS rls_diff FROM (
  (SELECT u.country, count(*) AS n FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id GROUP BY 1
   EXCEPT ALL TABLE jn_rls)
  UNION ALL
  (TABLE jn_rls EXCEPT ALL
   SELECT u.country, count(*) FROM jn_clicks c JOIN jn_users u ON u.id = c.user_id GROUP BY 1)) d;
SELECT country, n FROM jn_rls ORDER BY 1;
RESET ROLE;
-- a table privilege revoked later: the views of the role that lost it
-- are no longer maintained and marked invalid (sql/19_revoke.sql); the
-- insert succeeds and the other views get its rows
REVOKE SELECT (id, country) ON jn_users FROM jn_role;
\set VERBOSITY terse
SELECT pg_temp.ins(5, 9);
\set VERBOSITY default
SELECT view, valid FROM stream_ext.view_stats
 WHERE view IN ('jn_priv'::regclass, 'jn_rls'::regclass) ORDER BY 1;
GRANT SELECT (id, country) ON jn_users TO jn_role;
SELECT * FROM pg_temp.check('after privileges');
DROP VIEW jn_priv, jn_rls;
DROP POLICY jn_only_fr ON jn_users;
ALTER TABLE jn_users DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON jn_clicks FROM jn_role;
REVOKE ALL ON jn_users FROM jn_role;
REVOKE ALL ON SCHEMA public FROM jn_role;
DROP ROLE jn_role;

-- quoted, mixed-case names
CREATE TABLE "Jn Users" ("User Id" int, "Country Name" text);
INSERT INTO "Jn Users" VALUES (1, 'A b'), (2, 'C"d');
CREATE VIEW "Jn Quoted" WITH (continuous) AS
  SELECT u."Country Name", count(*) AS "N" FROM jn_clicks c JOIN "Jn Users" u ON u."User Id" = c.user_id GROUP BY 1;
SELECT pg_temp.ins(100, 10);
SELECT count(*) AS quoted_diff FROM (
  (SELECT u."Country Name", count(*) AS "N" FROM jn_all c JOIN "Jn Users" u ON u."User Id" = c.user_id GROUP BY 1
   EXCEPT ALL TABLE "Jn Quoted")
  UNION ALL
  (TABLE "Jn Quoted" EXCEPT ALL
   SELECT u."Country Name", count(*) FROM jn_all c JOIN "Jn Users" u ON u."User Id" = c.user_id GROUP BY 1)) d;

-- DROP TABLE ... CASCADE takes the joined views along, nothing left behind
SELECT count(*) AS objects_before FROM pg_class \gset
DROP TABLE jn_users CASCADE;
SELECT name FROM stream_ext.continuous_views WHERE name::text LIKE 'jn%' ORDER BY 1;
SELECT name FROM stream_ext.transforms WHERE name::text LIKE 'jn%' ORDER BY 1;
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'jn_clicks'::regclass;
DROP TABLE "Jn Users" CASCADE;
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'jn_clicks'::regclass;
SELECT relname FROM pg_class WHERE relname LIKE 'jn%mrel%' OR relname LIKE 'Jn%mrel%' ORDER BY 1;
DROP VIEW jn_route_counts;
DROP TABLE jn_out, jn_clicks CASCADE;
DROP TABLE jn_all, jn_log;
