-- Single-row and other small batches (docs/internals.md, "Small batches"):
-- what is cached between statements to make them cheap must never outlive
-- what it depends on.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA se28;
SET search_path = se28, public;
SET TimeZone = 'UTC';

-- Pinned settings (docs/security.md): maintenance compares the session's
-- settings with the pinned ones and sets only those that differ.  Whatever
-- the session's settings at each statement -- the defaults, all different,
-- all equal to the pinned values, different again, changed inside one
-- transaction -- the view sees the pinned ones and the session keeps its
-- own.  One group means every batch saw the same settings.
SELECT stream_ext.create_stream('pin_s', 'ts timestamptz, d interval, f float8');
CREATE VIEW pin_v WITH (continuous) AS
  SELECT ts::text AS t, d::text AS di, f::text AS ft,
         current_setting('search_path') AS sp, count(*) AS c
    FROM pin_s GROUP BY 1, 2, 3, 4;
INSERT INTO pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = 'sql_standard';
SET extra_float_digits = -2;
SET TimeZone = 'Asia/Kolkata';
SET search_path = se28, public, pg_catalog;
INSERT INTO pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SHOW DateStyle;
SHOW IntervalStyle;
SHOW extra_float_digits;
SHOW TimeZone;
SHOW search_path;
-- the session has exactly the pinned values: nothing to set
SET DateStyle = 'ISO, YMD';
SET IntervalStyle = 'postgres';
SET extra_float_digits = 1;
SET TimeZone = 'UTC';
SET search_path = pg_catalog;
INSERT INTO se28.pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
-- and then different again, one at a time
SET DateStyle = 'German';
INSERT INTO se28.pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET IntervalStyle = 'iso_8601';
INSERT INTO se28.pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET extra_float_digits = 0;
INSERT INTO se28.pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET TimeZone = 'America/New_York';
INSERT INTO se28.pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET search_path = se28;
INSERT INTO pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
-- inside one transaction, between two statements
BEGIN;
SET LOCAL TimeZone = 'UTC';
SET LOCAL DateStyle = 'ISO, YMD';
INSERT INTO pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SET LOCAL TimeZone = 'Pacific/Auckland';
SET LOCAL DateStyle = 'Postgres, DMY';
INSERT INTO pin_s VALUES ('2026-01-02 03:04:05+00', '1 day 2 hours', 0.30000000000000004);
SHOW TimeZone;
SHOW DateStyle;
COMMIT;
SHOW TimeZone;
SHOW DateStyle;
RESET ALL;
SET search_path = se28, public;
SET TimeZone = 'UTC';
SELECT * FROM pin_v;
