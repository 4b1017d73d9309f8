-- The lock guard's setting (docs/security.md, "Locks held by other roles";
-- the guard itself is tested by test/isolation/specs/combine_lock_guard.spec):
-- stream_ext.maintenance_lock_timeout, in milliseconds, 5 s by default; only
-- a superuser (or ALTER SYSTEM / ALTER DATABASE) changes it, so the owner of
-- a view cannot lift the bound in anyone's session, nor in his own.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
SHOW stream_ext.maintenance_lock_timeout;
SELECT unit, context, min_val, max_val FROM pg_settings WHERE name = 'stream_ext.maintenance_lock_timeout';
SET stream_ext.maintenance_lock_timeout = '250ms';
SHOW stream_ext.maintenance_lock_timeout;
SET stream_ext.maintenance_lock_timeout = -1;
RESET stream_ext.maintenance_lock_timeout;
CREATE ROLE lg53_user;
SET ROLE lg53_user;
SET stream_ext.maintenance_lock_timeout = 0;
SHOW stream_ext.maintenance_lock_timeout;
RESET ROLE;
DROP ROLE lg53_user;
