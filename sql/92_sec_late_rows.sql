-- Late rows of a view with allowed_lateness are kept whole, every column
-- of the stream (to_jsonb of the row), in stream_ext.late_rows, where the
-- view's owner reads them (docs/security.md, "Privileges checked at every
-- batch").  A role granted SELECT on some columns of another role's stream
-- could build such a view over them and read the other columns of every
-- late row.  Now creating one needs SELECT on every column (42501), and a
-- view whose owner loses one is invalid at its next batch, like any other.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE lr92_reader;
CREATE ROLE lr92_owner;
CREATE SCHEMA lr92 AUTHORIZATION lr92_owner;
CREATE SCHEMA lr92_r AUTHORIZATION lr92_reader;
SET ROLE lr92_owner;
SELECT stream_ext.create_stream('lr92.ev', 'ts timestamptz, k int, secret text');
GRANT USAGE ON SCHEMA lr92 TO lr92_reader;
GRANT SELECT (ts, k) ON lr92.ev TO lr92_reader;
SET ROLE lr92_reader;
-- SELECT on the columns it reads is not enough: the late rows hold them all
CREATE VIEW lr92_r.v WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT stream_ext.tumble(ts, '1 minute') AS w, k, count(*) AS n FROM lr92.ev GROUP BY 1, 2;
-- without allowed_lateness, what it reads is enough
CREATE VIEW lr92_r.plain WITH (continuous) AS
  SELECT stream_ext.tumble(ts, '1 minute') AS w, k, count(*) AS n FROM lr92.ev GROUP BY 1, 2;
SET ROLE lr92_owner;
INSERT INTO lr92.ev VALUES ('2026-01-01 10:00+00', 1, 'not yours');
INSERT INTO lr92.ev VALUES ('2026-01-01 09:00+00', 1, 'top secret');
SET ROLE lr92_reader;
SELECT "row" FROM stream_ext.late_rows;
SELECT w, k, n FROM lr92_r.plain ORDER BY w;
-- with SELECT on the whole stream it may; losing a column's makes it invalid
SET ROLE lr92_owner;
GRANT SELECT ON lr92.ev TO lr92_reader;
SET ROLE lr92_reader;
CREATE VIEW lr92_r.v WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT stream_ext.tumble(ts, '1 minute') AS w, k, count(*) AS n FROM lr92.ev GROUP BY 1, 2;
SET ROLE lr92_owner;
INSERT INTO lr92.ev VALUES ('2026-01-01 11:00+00', 2, 'fine');
INSERT INTO lr92.ev VALUES ('2026-01-01 10:30+00', 2, 'late, readable');
REVOKE SELECT ON lr92.ev FROM lr92_reader;
GRANT SELECT (ts, k) ON lr92.ev TO lr92_reader;
INSERT INTO lr92.ev VALUES ('2026-01-01 10:40+00', 2, 'late, not readable');
SET ROLE lr92_reader;
SELECT "row"->>'secret' AS secret FROM stream_ext.late_rows ORDER BY 1;
SELECT reason FROM stream_ext.invalid_objects WHERE object = 'lr92_r.v'::regclass;
RESET ROLE;
DROP SCHEMA lr92_r CASCADE;
DROP SCHEMA lr92 CASCADE;
DROP ROLE lr92_reader;
DROP ROLE lr92_owner;
