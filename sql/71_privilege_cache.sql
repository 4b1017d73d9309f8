-- The owner's privileges are checked at every batch "as of that batch",
-- although the check itself is cached per backend (privileges.c: redone
-- only after an invalidation that can change a privilege -- a relcache
-- invalidation, a change of pg_authid or pg_auth_members).  Between two
-- single-row inserts of one session: a REVOKE of the table, of the role
-- membership the privilege came through, NOINHERIT on the owner; a REVOKE
-- rolled back (with its savepoint) is not seen, nor one granted back in
-- the same transaction before the batch; a GRANT back after the view was
-- marked invalid does not revive it.  (An isolation test, overhead_revoke,
-- has the REVOKE committed by another session.)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE ovh71_owner;
CREATE ROLE ovh71_reader;
CREATE ROLE ovh71_group;
GRANT ovh71_group TO ovh71_reader;
CREATE SCHEMA ovh71 AUTHORIZATION ovh71_owner;
GRANT USAGE, CREATE ON SCHEMA ovh71 TO ovh71_reader;
SET ROLE ovh71_owner;
SELECT stream_ext.create_stream('ovh71.direct', 'k int');
SELECT stream_ext.create_stream('ovh71.via_group', 'k int');
SELECT stream_ext.create_stream('ovh71.inherit', 'k int');
SELECT stream_ext.create_stream('ovh71.rolled_back', 'k int');
GRANT SELECT ON ovh71.direct, ovh71.rolled_back TO ovh71_reader;
GRANT SELECT ON ovh71.via_group, ovh71.inherit TO ovh71_group;
RESET ROLE;
SET ROLE ovh71_reader;
CREATE VIEW ovh71.v_direct WITH (continuous) AS SELECT count(*) AS n FROM ovh71.direct;
CREATE VIEW ovh71.v_group WITH (continuous) AS SELECT count(*) AS n FROM ovh71.via_group;
CREATE VIEW ovh71.v_inherit WITH (continuous) AS SELECT count(*) AS n FROM ovh71.inherit;
CREATE VIEW ovh71.v_rolled_back WITH (continuous) AS SELECT count(*) AS n FROM ovh71.rolled_back;
RESET ROLE;

-- the owner of the streams inserts; each first insert caches the check
SET ROLE ovh71_owner;
INSERT INTO ovh71.direct VALUES (1);
INSERT INTO ovh71.via_group VALUES (1);
INSERT INTO ovh71.inherit VALUES (1);
INSERT INTO ovh71.rolled_back VALUES (1);
RESET ROLE;

-- a REVOKE of the table between two inserts: the second batch sees it
SET ROLE ovh71_owner;
REVOKE SELECT ON ovh71.direct FROM ovh71_reader;
INSERT INTO ovh71.direct VALUES (2);
RESET ROLE;

-- the privilege came through a role: the membership revoked (pg_auth_members)
REVOKE ovh71_group FROM ovh71_reader;
SET ROLE ovh71_owner;
INSERT INTO ovh71.via_group VALUES (2);
RESET ROLE;
GRANT ovh71_group TO ovh71_reader;

-- ... or no longer inherited (pg_authid)
ALTER ROLE ovh71_reader NOINHERIT;
SET ROLE ovh71_owner;
INSERT INTO ovh71.inherit VALUES (2);
RESET ROLE;
ALTER ROLE ovh71_reader INHERIT;

-- a REVOKE rolled back with its savepoint, and one granted back before
-- the batch in the same transaction, are not seen: the view stays valid
BEGIN;
SET LOCAL ROLE ovh71_owner;
SAVEPOINT s;
REVOKE SELECT ON ovh71.rolled_back FROM ovh71_reader;
ROLLBACK TO s;
INSERT INTO ovh71.rolled_back VALUES (2);
REVOKE SELECT ON ovh71.rolled_back FROM ovh71_reader;
GRANT SELECT ON ovh71.rolled_back TO ovh71_reader;
INSERT INTO ovh71.rolled_back VALUES (3);
COMMIT;

SELECT object::text, kind, reason FROM stream_ext.invalid_objects
 WHERE object::text LIKE 'ovh71.%' ORDER BY object::text;
SET ROLE ovh71_reader;
SELECT n AS rolled_back_rows FROM ovh71.v_rolled_back;
SELECT n FROM ovh71.v_direct;
RESET ROLE;

-- granting back does not revive the invalid views: they missed rows
SET ROLE ovh71_owner;
GRANT SELECT ON ovh71.direct TO ovh71_reader;
INSERT INTO ovh71.direct VALUES (3);
RESET ROLE;
SELECT object::text FROM stream_ext.invalid_objects
 WHERE object::text LIKE 'ovh71.%' ORDER BY object::text;

SET client_min_messages = warning;
DROP SCHEMA ovh71 CASCADE;
DROP ROLE ovh71_owner;
DROP ROLE ovh71_reader;
DROP ROLE ovh71_group;
