-- stream_ext upgrade 0.2 -> 0.3.  Every object added or changed in src/sql/ since
-- 0.2 must be added or changed here too: sql/12_upgrade.sql checks that an
-- updated installation has exactly the objects of a fresh one.
\echo Use "ALTER EXTENSION stream_ext UPDATE TO '0.3'" to load this file. \quit

-- first contact: create_stream() raises an error on NULL arguments
ALTER FUNCTION stream_ext.create_stream(text, text) CALLED ON NULL INPUT;
