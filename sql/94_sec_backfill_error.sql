-- The error of a failed backfill attempt (a rebuild beside a view being
-- replaced, a Kafka replay) may quote the row or message that broke it,
-- like the reason of an invalid view (93_sec_invalid_reason).
-- stream_ext.rebuilds.last_error, stream_ext.backfills.last_error and
-- backfill_progress.last_error were readable by every role.  Now the
-- tables' last_error is not granted to PUBLIC (their other columns are),
-- and backfill_progress shows it to those who may read the view.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE bf94_owner;
CREATE ROLE bf94_reader;
CREATE ROLE bf94_nobody;
CREATE SCHEMA bf94 AUTHORIZATION bf94_owner;
SET ROLE bf94_owner;
SELECT stream_ext.create_stream('bf94.ev', 'k int, ssn text');
INSERT INTO bf94.ev VALUES (1, '123-45-6789');
CREATE VIEW bf94.cv WITH (continuous) AS SELECT k, count(*) AS n FROM bf94.ev GROUP BY k;
GRANT USAGE ON SCHEMA bf94 TO bf94_reader;
GRANT SELECT ON bf94.cv TO bf94_reader;
-- a new definition the stored row breaks: its backfill fails, and retries
CREATE OR REPLACE VIEW bf94.cv WITH (continuous) AS
  SELECT k, count(*) AS n, sum(ssn::int) AS s FROM bf94.ev GROUP BY k;
DO $$
BEGIN
  FOR i IN 1 .. 1500 LOOP
    EXIT WHEN (SELECT last_error IS NOT NULL FROM stream_ext.backfill_progress
                WHERE view = 'bf94.cv'::regclass);
    PERFORM pg_sleep(0.02);
  END LOOP;
END $$;
-- its owner and the view's readers see why
SELECT kind, state, last_error FROM stream_ext.backfill_progress WHERE view = 'bf94.cv'::regclass;
SET ROLE bf94_reader;
SELECT kind, last_error FROM stream_ext.backfill_progress WHERE view = 'bf94.cv'::regclass;
-- others see that it runs, not why it fails
SET ROLE bf94_nobody;
SELECT kind, state, last_error FROM stream_ext.backfill_progress WHERE view::text = 'bf94.cv';
SELECT view, state FROM stream_ext.rebuilds WHERE view::text = 'bf94.cv';
SELECT last_error FROM stream_ext.rebuilds;
SELECT count(*) AS replays FROM stream_ext.backfills;
SELECT last_error FROM stream_ext.backfills;
SET ROLE bf94_owner;
SELECT stream_ext.cancel_backfill('bf94.cv');
RESET ROLE;
DROP SCHEMA bf94 CASCADE;
DROP ROLE bf94_owner;
DROP ROLE bf94_reader;
DROP ROLE bf94_nobody;
