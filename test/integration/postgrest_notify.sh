#!/usr/bin/env bash
# test/integration/postgrest_notify.sh -- PostgREST's schema cache reload:
# creating or dropping a continuous view and stream_ext.expose()/unexpose()
# send NOTIFY pgrst, 'reload schema' at commit, unless stream_ext.notify_pgrst
# is off.  pg_regress cannot check notifications (psql prints the sender's
# PID), so one psql session LISTENs and we compare its output without PIDs.
set -euo pipefail
source "$STREAM_EXT_ROOT/test/lib/integration.sh"
it_db postgrest_notify

out=$(psql -X -q -A -t -v ON_ERROR_STOP=1 2>&1 <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION stream_ext;
CREATE ROLE it_web_anon NOLOGIN;
SELECT stream_ext.create_stream('clicks', 'url text');
LISTEN pgrst;
SELECT '1 create continuous view';
CREATE VIEW v WITH (continuous) AS SELECT url, count(*) FROM clicks GROUP BY url;
SELECT '2 expose';
SELECT stream_ext.expose('v', 'api', 'it_web_anon');
SELECT '3 unexpose';
SELECT stream_ext.unexpose('v', 'api');
SELECT '4 drop continuous view';
DROP VIEW v;
SELECT '5 plain view and table: nothing';
CREATE VIEW plain AS SELECT 1 AS one;
DROP VIEW plain;
CREATE TABLE t (a int);
DROP TABLE t;
SELECT '6 rolled back: nothing';
BEGIN;
CREATE VIEW v WITH (continuous) AS SELECT url, count(*) FROM clicks GROUP BY url;
ROLLBACK;
SELECT '7 one transaction: one notification';
BEGIN;
CREATE VIEW v WITH (continuous) AS SELECT url, count(*) FROM clicks GROUP BY url;
SELECT stream_ext.expose('v', 'api', 'it_web_anon');
COMMIT;
SELECT '8 drop stream cascade';
DROP TABLE clicks CASCADE;
SELECT '9 notify_pgrst off: nothing';
SET stream_ext.notify_pgrst = off;
SELECT stream_ext.create_stream('clicks', 'url text');
CREATE VIEW v WITH (continuous) AS SELECT url, count(*) FROM clicks GROUP BY url;
SELECT stream_ext.expose('v', 'api', 'it_web_anon');
SELECT stream_ext.unexpose('v', 'api');
DROP VIEW v;
RESET stream_ext.notify_pgrst;
SELECT '10 done';
DROP SCHEMA api;
DROP ROLE it_web_anon;
SQL
)
got=$(sed -E 's/server process with PID [0-9]+/server process with PID N/' <<<"$out")
n='Asynchronous notification "pgrst" with payload "reload schema" received from server process with PID N.'
want="clicks
1 create continuous view
$n
2 expose
api.v
$n
3 unexpose

$n
4 drop continuous view
$n
5 plain view and table: nothing
6 rolled back: nothing
7 one transaction: one notification
api.v
$n
8 drop stream cascade
$n
9 notify_pgrst off: nothing
clicks
api.v

10 done"
if [[ $got != "$want" ]]; then
	echo "notifications differ (- expected, + got):"
	diff <(echo "$want") <(echo "$got") || true
	exit 1
fi
echo "ok: NOTIFY pgrst, 'reload schema' sent exactly when expected"
