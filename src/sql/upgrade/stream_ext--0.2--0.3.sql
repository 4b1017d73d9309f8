-- stream_ext upgrade 0.2 -> 0.3.  Every object added or changed in src/sql/ since
-- 0.2 must be added or changed here too: sql/12_upgrade.sql checks that an
-- updated installation has exactly the objects of a fresh one.
\echo Use "ALTER EXTENSION stream_ext UPDATE TO '0.3'" to load this file. \quit

-- Kafka security (issue #14).

-- Dead letters go with their source (drop_source deletes them): before, a
-- role creating a source under a dropped source's name could read and
-- delete the dead letters left behind.  Those left behind by sources
-- dropped before this update are deleted now, for the same reason.
DELETE FROM stream_ext.dead_letters d
 WHERE NOT EXISTS (SELECT 1 FROM stream_ext.kafka_sources s WHERE s.name = d.source);
ALTER TABLE stream_ext.dead_letters
    ADD FOREIGN KEY (source) REFERENCES stream_ext.kafka_sources (name)
        ON DELETE CASCADE ON UPDATE CASCADE;
