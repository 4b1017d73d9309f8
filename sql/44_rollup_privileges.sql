-- Roll-ups and privileges (docs/continuous-views.md#views-over-views): a
-- roll-up's owner needs SELECT on the upstream view, checked at CREATE and
-- at every upstream batch; it never reads the upstream's tables with its own
-- rights, and its expressions run as itself, not as the upstream's owner.
-- Losing SELECT marks the roll-up invalid and the upstream's writers go on;
-- the upstream's owner can always drop the upstream (CASCADE) and the
-- roll-up's owner its roll-up.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE rollup_owner;
CREATE ROLE rollup_reader;
CREATE SCHEMA rollup_up AUTHORIZATION rollup_owner;
CREATE SCHEMA rollup_r AUTHORIZATION rollup_reader;
GRANT USAGE ON SCHEMA rollup_up TO rollup_reader;

SET ROLE rollup_owner;
SELECT stream_ext.create_stream('rollup_up.ev', 'k int, ts timestamptz, v int');
CREATE TABLE rollup_up.secret (x int);
INSERT INTO rollup_up.secret VALUES (42);
CREATE VIEW rollup_up.per_min WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, count(*) AS n, avg(v) AS a
    FROM rollup_up.ev GROUP BY k, minute;
INSERT INTO rollup_up.ev SELECT i % 4, '2024-01-01'::timestamptz + i * interval '9 seconds', i
  FROM generate_series(1, 400) i;
RESET ROLE;

-- without SELECT on the upstream: refused
SET ROLE rollup_reader;
CREATE VIEW rollup_r.per_hour WITH (continuous) AS
  SELECT date_trunc('hour', minute) AS hour, sum(n) AS n FROM rollup_up.per_min GROUP BY 1;
-- nor can it read the upstream's tables
SELECT count(*) FROM rollup_up.per_min_mrel;
RESET ROLE;

-- with it: the roll-up backfills from the upstream's tables it cannot read
SET ROLE rollup_owner;
GRANT SELECT ON rollup_up.per_min TO rollup_reader;
RESET ROLE;
SET ROLE rollup_reader;
-- whoami() runs in the roll-up's key: as the roll-up's owner, at the
-- backfill and at every batch
CREATE FUNCTION rollup_r.whoami(int) RETURNS text LANGUAGE sql IMMUTABLE
  AS $$ SELECT current_user::text $$;
CREATE VIEW rollup_r.per_hour WITH (continuous) AS
  SELECT rollup_r.whoami(k) AS who, date_trunc('hour', minute) AS hour,
         sum(n) AS n, stream_ext.combine(a) AS a
    FROM rollup_up.per_min GROUP BY 1, 2;
SELECT * FROM rollup_r.per_hour ORDER BY hour;
-- a key reading the upstream owner's table: refused, the backfill runs as the reader
CREATE FUNCTION rollup_r.peek(int) RETURNS int LANGUAGE sql IMMUTABLE
  AS $$ SELECT x FROM rollup_up.secret $$;
CREATE VIEW rollup_r.peeking WITH (continuous) AS
  SELECT rollup_r.peek(k) AS x, sum(n) AS n FROM rollup_up.per_min GROUP BY 1;
RESET ROLE;

-- the upstream's owner inserts: the roll-up is maintained as its owner
SET ROLE rollup_owner;
INSERT INTO rollup_up.ev SELECT i % 4, '2024-01-01 01:00'::timestamptz + i * interval '9 seconds', i
  FROM generate_series(1, 400) i;
RESET ROLE;
SELECT who, hour, n = (SELECT count(*) FROM rollup_up.ev WHERE date_trunc('hour', ts) = hour) AS n_exact,
       a = (SELECT avg(v) FROM rollup_up.ev WHERE date_trunc('hour', ts) = hour) AS a_exact
  FROM rollup_r.per_hour ORDER BY hour;

-- an error in another role's roll-up marks it invalid, and the upstream's
-- batch goes on (docs/security.md, "Errors in other roles' views")
SET ROLE rollup_reader;
CREATE FUNCTION rollup_r.picky(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
  AS $$ BEGIN IF $1 = 99 THEN RAISE EXCEPTION 'picky: no %', $1; END IF; RETURN $1; END $$;
CREATE VIEW rollup_r.picky_rollup WITH (continuous) AS
  SELECT rollup_r.picky(k) AS k, sum(n) AS n FROM rollup_up.per_min GROUP BY 1;
RESET ROLE;
SET ROLE rollup_owner;
INSERT INTO rollup_up.ev VALUES (99, '2024-01-01 05:00', 1);
SELECT count(*) AS rows_of_99 FROM rollup_up.ev WHERE k = 99;
RESET ROLE;
DROP VIEW rollup_r.picky_rollup;

-- REVOKE: the next upstream batch marks the roll-up invalid and succeeds
SET ROLE rollup_owner;
REVOKE SELECT ON rollup_up.per_min FROM rollup_reader;
INSERT INTO rollup_up.ev VALUES (1, '2024-01-01 03:00', 1);
SELECT count(*) AS upstream_groups_of_the_new_hour FROM rollup_up.per_min WHERE minute >= '2024-01-01 03:00';
RESET ROLE;
SELECT object, kind, reason FROM stream_ext.invalid_objects WHERE object = 'rollup_r.per_hour'::regclass;
SET ROLE rollup_reader;
SELECT count(*) FROM rollup_r.per_hour;
RESET ROLE;
-- a GRANT does not bring it back: it missed a batch
SET ROLE rollup_owner;
GRANT SELECT ON rollup_up.per_min TO rollup_reader;
INSERT INTO rollup_up.ev VALUES (1, '2024-01-01 04:00', 1);
RESET ROLE;
SET ROLE rollup_reader;
SELECT count(*) FROM rollup_r.per_hour;
-- the roll-up's owner drops its roll-up, whose trigger sits on the
-- upstream owner's delta
DROP VIEW rollup_r.per_hour;
CREATE VIEW rollup_r.per_day WITH (continuous) AS
  SELECT date_trunc('day', minute) AS day, sum(n) AS n FROM rollup_up.per_min GROUP BY 1;
RESET ROLE;
SELECT count(*) AS rollup_triggers FROM pg_trigger WHERE tgfoid = 'stream_ext.maintain_rollup'::regproc
   AND tgrelid = 'rollup_up.per_min_delta'::regclass;

-- the upstream's owner drops the upstream: CASCADE takes the reader's roll-up
SET ROLE rollup_owner;
DROP VIEW rollup_up.per_min;
DROP VIEW rollup_up.per_min CASCADE;
INSERT INTO rollup_up.ev VALUES (1, now(), 1);
RESET ROLE;
SELECT to_regclass('rollup_r.per_day') AS reader_rollup_left;

SET client_min_messages = warning;
DROP SCHEMA rollup_up CASCADE;
DROP SCHEMA rollup_r CASCADE;
RESET client_min_messages;
DROP ROLE rollup_owner;
DROP ROLE rollup_reader;
