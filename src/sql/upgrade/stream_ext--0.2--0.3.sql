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

-- source_status shows 'starting' while a worker sets up its consumer
-- (it showed 'running').
CREATE OR REPLACE VIEW stream_ext.source_status WITH (security_invoker = true) AS
SELECT s.name AS source,
       s.stream,
       s.topic,
       s.format,
       s.owner,
       CASE
         WHEN s.state <> 'running' THEN s.state
         WHEN w.workers IS NULL THEN 'starting'
         WHEN w.retrying > 0 THEN 'retrying'
         WHEN w.starting > 0 THEN 'starting'
         ELSE 'running'
       END AS state,
       coalesce(w.workers, 0) AS workers,
       coalesce(w.messages, 0) AS messages,
       coalesce(w.bytes, 0) AS bytes,
       coalesce(w.batches, 0) AS batches,
       coalesce(w.errors, 0) AS errors,
       coalesce(w.dead_letters, 0) AS dead_letters,
       l.lag,
       l.partition_lag,
       coalesce(w.rate, 0) AS rate,
       coalesce(w.last_error, s.last_error) AS last_error,
       w.last_error_time,
       w.last_batch_time,
       w.started_at
  FROM stream_ext.kafka_sources s
  LEFT JOIN (SELECT source_id,
                    count(*)::int AS workers,
                    count(*) FILTER (WHERE state = 'retrying') AS retrying,
                    count(*) FILTER (WHERE state = 'starting') AS starting,
                    sum(messages)::bigint AS messages,
                    sum(bytes)::bigint AS bytes,
                    sum(batches)::bigint AS batches,
                    sum(errors)::bigint AS errors,
                    sum(dead_letters)::bigint AS dead_letters,
                    sum(rate) AS rate,
                    (array_agg(last_error ORDER BY last_error_time DESC NULLS LAST))[1] AS last_error,
                    max(last_error_time) AS last_error_time,
                    max(last_batch_time) AS last_batch_time,
                    min(started_at) AS started_at
               FROM stream_ext.kafka_worker_stats()
              GROUP BY source_id) w ON w.source_id = s.id
  LEFT JOIN (SELECT source,
                    sum(lag)::bigint AS lag,
                    jsonb_object_agg(partition, lag ORDER BY partition) AS partition_lag
               FROM stream_ext.source_partitions
              GROUP BY source) l ON l.source = s.name;

