-- Identifiers with quotes, spaces, semicolons and mixed case work
-- everywhere: every name stream_ext writes into SQL it generates is quoted,
-- so none of these can break a statement or inject one.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA "Sch ema";
CREATE TABLE canary (x int);

SELECT stream_ext.create_stream('"Sch ema"."My ""odd"" Stream"',
  '"Weird Col" text, "select" int, "Mixed" int, "a;b" text, "); DROP TABLE canary; --" int');
\d "Sch ema"."My ""odd"" Stream"
SELECT name, schema, stream_name FROM stream_ext.streams WHERE schema = 'Sch ema';

INSERT INTO "Sch ema"."My ""odd"" Stream" ("Weird Col", "select", "Mixed", "a;b", "); DROP TABLE canary; --")
SELECT CASE WHEN i % 5 = 0 THEN NULL ELSE 'it''s "' || (i % 3) || '"' END, i % 4, i, 'v' || (i % 6), i % 2
  FROM generate_series(1, 200) i;

-- group keys, aggregate arguments, output columns, view names: all odd
CREATE VIEW "Sch ema"."View ""x"" 1" WITH (continuous) AS
  SELECT "Weird Col", "select" AS "from",
         count(*) AS "Count(*)",
         sum("Mixed") AS "sum; DROP TABLE canary",
         count(DISTINCT "a;b") AS "d""q",
         avg("select") AS "Avg",
         max("); DROP TABLE canary; --") AS "m'x"
    FROM "Sch ema"."My ""odd"" Stream"
   GROUP BY "Weird Col", "select";

-- keyless, with a name that looks like the end of a statement
CREATE VIEW "Sch ema"."Total'); DROP TABLE canary; --" WITH (continuous) AS
  SELECT count(*) AS "n'n", max("Weird Col") AS "MAX", count(DISTINCT "Mixed") AS "dist inct"
    FROM "Sch ema"."My ""odd"" Stream";

-- an expression group key, a filter, mixed-case unqualified names
SET search_path = "Sch ema", public;
CREATE VIEW "lower Case" WITH (continuous) AS
  SELECT lower("Weird Col") AS "Lower Col", count(*) AS "N"
    FROM "My ""odd"" Stream"
   WHERE "a;b" <> 'v0'
   GROUP BY 1;
RESET search_path;

SELECT name, source FROM stream_ext.continuous_views ORDER BY name::text;
SELECT count(*) AS aux_tables FROM stream_ext.view_catalog
 WHERE stream = '"Sch ema"."My ""odd"" Stream"'::regclass AND aux_tables <> '{}';

INSERT INTO "Sch ema"."My ""odd"" Stream" ("Weird Col", "select", "Mixed", "a;b", "); DROP TABLE canary; --")
SELECT CASE WHEN i % 7 = 0 THEN NULL ELSE 'IT''S "' || (i % 5) || '"' END, i % 3, i * 2, 'v' || (i % 4), i % 3
  FROM generate_series(1, 300) i;
COPY "Sch ema"."My ""odd"" Stream" ("Weird Col", "select", "Mixed", "a;b") FROM stdin (FORMAT csv);
"quoted, ""with"" comma",1,5,v9
,2,6,v0
\.

-- the oracle: each view equals its query over the stream, both ways
SELECT count(*) AS differences FROM (
  (TABLE "Sch ema"."View ""x"" 1"
   EXCEPT ALL
   SELECT "Weird Col", "select", count(*), sum("Mixed"), count(DISTINCT "a;b"), avg("select"),
          max("); DROP TABLE canary; --")
     FROM "Sch ema"."My ""odd"" Stream" GROUP BY 1, 2)
  UNION ALL
  (SELECT "Weird Col", "select", count(*), sum("Mixed"), count(DISTINCT "a;b"), avg("select"),
          max("); DROP TABLE canary; --")
     FROM "Sch ema"."My ""odd"" Stream" GROUP BY 1, 2
   EXCEPT ALL
   TABLE "Sch ema"."View ""x"" 1")) d;
SELECT (SELECT row("n'n", "MAX", "dist inct") FROM "Sch ema"."Total'); DROP TABLE canary; --")
     = (SELECT row(count(*), max("Weird Col"), count(DISTINCT "Mixed")) FROM "Sch ema"."My ""odd"" Stream")
  AS total_matches;
SELECT count(*) AS differences FROM (
  (TABLE "Sch ema"."lower Case"
   EXCEPT ALL
   SELECT lower("Weird Col"), count(*) FROM "Sch ema"."My ""odd"" Stream" WHERE "a;b" <> 'v0' GROUP BY 1)
  UNION ALL
  (SELECT lower("Weird Col"), count(*) FROM "Sch ema"."My ""odd"" Stream" WHERE "a;b" <> 'v0' GROUP BY 1
   EXCEPT ALL
   TABLE "Sch ema"."lower Case")) d;
SELECT * FROM "Sch ema"."lower Case" ORDER BY 1;

-- observability and PostgREST exposure take such names too
SELECT view, rows_in, batches, groups FROM stream_ext.view_stats
 WHERE stream = '"Sch ema"."My ""odd"" Stream"'::regclass ORDER BY view::text;
SELECT stream_ext.view_groups('"Sch ema"."View ""x"" 1"');
SELECT count(*) > 0 AS explains FROM stream_ext.explain('"Sch ema"."Total''); DROP TABLE canary; --"');
SET stream_ext.notify_pgrst = off;
CREATE ROLE "Web ""anon""";
SELECT stream_ext.expose('"Sch ema"."View ""x"" 1"', 'A"pi', 'Web "anon"');
SELECT count(*) FROM "A""pi"."View ""x"" 1";
SELECT stream_ext.unexpose('"Sch ema"."View ""x"" 1"', 'A"pi');
DROP SCHEMA "A""pi";
DROP ROLE "Web ""anon""";
RESET stream_ext.notify_pgrst;

-- a Kafka source with odd names (created and dropped; no broker needed)
SELECT stream_ext.create_kafka_source('src "1"; DROP TABLE canary; --',
  '"Sch ema"."My ""odd"" Stream"', 'localhost:1', 'topic ''x''', 'csv',
  '{"columns": ["Weird Col", "select"], "key_column": "a;b",
    "offset_column": "); DROP TABLE canary; --"}');
SELECT name, stream, topic, format, state FROM stream_ext.kafka_sources;
SELECT stream_ext.drop_source('src "1"; DROP TABLE canary; --');
SELECT count(*) AS sources FROM stream_ext.kafka_sources;

-- session, hopping and sliding windows over odd names (time column too)
SELECT stream_ext.create_stream('"Sch ema"."Ev ""Time"""', '"Who?" text, "Event Time" timestamptz, "Val ue" int');
CREATE VIEW "Sch ema"."Sess ""ions""" WITH (continuous, session_gap = '10 minutes', time_column = 'Event Time') AS
  SELECT "Who?", count(*) AS "N ""n""", sum("Val ue") AS "S;s" FROM "Sch ema"."Ev ""Time""" GROUP BY "Who?";
CREATE VIEW "Sch ema"."Hop ""ping""" WITH (continuous) AS
  SELECT "Who?", w.window_start AS "Win Start", count(*) AS "C'c"
    FROM "Sch ema"."Ev ""Time""", stream_ext.hop("Event Time", '10 minutes', '5 minutes') AS w(window_start)
   GROUP BY "Who?", w.window_start;
CREATE VIEW "Sch ema"."Slid ""ing""" WITH (continuous, sliding_window = '1 hour', time_column = 'Event Time', step = '1 minute') AS
  SELECT "Who?", count(*) AS "Recent ""n""" FROM "Sch ema"."Ev ""Time""" GROUP BY "Who?";
INSERT INTO "Sch ema"."Ev ""Time""" SELECT 'who "' || (i % 3) || '"', now() - (i * 7 % 100) * interval '1 minute', i
  FROM generate_series(1, 200) i;
INSERT INTO "Sch ema"."Ev ""Time""" SELECT 'who "' || (i % 4) || '"', now() - (i * 3 % 50) * interval '1 minute', i
  FROM generate_series(1, 50) i;
SELECT count(*) AS session_differences FROM (
  (TABLE "Sch ema"."Sess ""ions""" EXCEPT ALL
   SELECT "Who?", count(*), sum("Val ue"), min("Event Time"), max("Event Time")
     FROM (SELECT *, sum(brk) OVER (PARTITION BY "Who?" ORDER BY "Event Time") AS session
             FROM (SELECT *, CASE WHEN "Event Time" - lag("Event Time") OVER (PARTITION BY "Who?" ORDER BY "Event Time")
                                       <= '10 minutes' THEN 0 ELSE 1 END AS brk
                     FROM "Sch ema"."Ev ""Time""" WHERE "Event Time" IS NOT NULL) a) b
    GROUP BY "Who?", session)
  UNION ALL
  (SELECT "Who?", count(*), sum("Val ue"), min("Event Time"), max("Event Time")
     FROM (SELECT *, sum(brk) OVER (PARTITION BY "Who?" ORDER BY "Event Time") AS session
             FROM (SELECT *, CASE WHEN "Event Time" - lag("Event Time") OVER (PARTITION BY "Who?" ORDER BY "Event Time")
                                       <= '10 minutes' THEN 0 ELSE 1 END AS brk
                     FROM "Sch ema"."Ev ""Time""" WHERE "Event Time" IS NOT NULL) a) b
    GROUP BY "Who?", session
   EXCEPT ALL TABLE "Sch ema"."Sess ""ions""")) d;
SELECT count(*) AS hop_differences FROM (
  (TABLE "Sch ema"."Hop ""ping""" EXCEPT ALL
   SELECT "Who?", w.window_start, count(*)
     FROM "Sch ema"."Ev ""Time""", stream_ext.hop("Event Time", '10 minutes', '5 minutes') AS w(window_start) GROUP BY 1, 2)
  UNION ALL
  (SELECT "Who?", w.window_start, count(*)
     FROM "Sch ema"."Ev ""Time""", stream_ext.hop("Event Time", '10 minutes', '5 minutes') AS w(window_start) GROUP BY 1, 2
   EXCEPT ALL TABLE "Sch ema"."Hop ""ping""")) d;
SELECT count(*) AS sliding_differences FROM (
  (TABLE "Sch ema"."Slid ""ing""" EXCEPT ALL
   SELECT "Who?", count(*) FROM "Sch ema"."Ev ""Time"""
    WHERE stream_ext.tumble("Event Time", '1 minute') >= now() - interval '1 hour' GROUP BY 1)
  UNION ALL
  (SELECT "Who?", count(*) FROM "Sch ema"."Ev ""Time"""
    WHERE stream_ext.tumble("Event Time", '1 minute') >= now() - interval '1 hour' GROUP BY 1
   EXCEPT ALL TABLE "Sch ema"."Slid ""ing""")) d;
SELECT count(*) > 0 AS has_sessions FROM "Sch ema"."Sess ""ions""";

-- renaming the views and the stream keeps them maintained
ALTER VIEW "Sch ema"."lower Case" RENAME TO "Lower ""Case""";
ALTER TABLE "Sch ema"."My ""odd"" Stream" RENAME TO "Renamed Stream";
INSERT INTO "Sch ema"."Renamed Stream" ("Weird Col", "a;b") VALUES ('It''s "1"', 'v1');
SELECT * FROM "Sch ema"."Lower ""Case""" WHERE "Lower Col" = 'it''s "1"';
SELECT "n'n" FROM "Sch ema"."Total'); DROP TABLE canary; --";

-- a name at the length limit: the materialization and side table names
-- are truncated to fit, and stay unique
CREATE VIEW "Sch ema"."A very long ""view"" name that fills NAMEDATALEN to the brim!" WITH (continuous) AS
  SELECT "select", count(DISTINCT "Mixed") AS "distinct ""Mixed"" values, also a long name"
    FROM "Sch ema"."Renamed Stream" GROUP BY "select";
SELECT v.view, v.matrel, v.aux_tables FROM stream_ext.view_catalog v
 WHERE v.view = '"Sch ema"."A very long ""view"" name that fills NAMEDATALEN to the brim!"'::regclass;
SELECT (SELECT sum("distinct ""Mixed"" values, also a long name")
          FROM "Sch ema"."A very long ""view"" name that fills NAMEDATALEN to the brim!")
     = (SELECT count(*) FROM (SELECT DISTINCT "select", "Mixed" FROM "Sch ema"."Renamed Stream"
                               WHERE "Mixed" IS NOT NULL) d) AS long_name_matches;

-- maintenance names its tables schema-qualified: a schema holding
-- materializations cannot be renamed, nor can one be moved; a schema
-- holding only a stream can
ALTER SCHEMA "Sch ema" RENAME TO "Other";
ALTER TABLE "Sch ema"."View ""x"" 1_mrel" SET SCHEMA public;
CREATE SCHEMA "Stream ""Only""";
SELECT stream_ext.create_stream('"Stream ""Only"""."s 2"', 'x int');
CREATE VIEW "Sch ema"."On s2" WITH (continuous) AS SELECT count(*) AS c FROM "Stream ""Only"""."s 2";
ALTER SCHEMA "Stream ""Only""" RENAME TO "Renamed ""Only""";
INSERT INTO "Renamed ""Only"""."s 2" VALUES (1), (2);
SELECT c FROM "Sch ema"."On s2";
DROP SCHEMA "Renamed ""Only""" CASCADE;

DROP VIEW "Sch ema"."View ""x"" 1";
DROP SCHEMA "Sch ema" CASCADE;
SELECT count(*) AS views FROM stream_ext.view_catalog;
SELECT count(*) AS streams FROM stream_ext.stream_catalog;
-- nothing was injected
SELECT count(*) AS canary FROM canary;
DROP TABLE canary;
