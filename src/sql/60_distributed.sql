-- stream_ext install script: one continuous view over several nodes
-- (docs/scale-out.md; query/distributed.c builds the combining SELECT).

CREATE FUNCTION stream_ext.distributed_select_sql(view regclass, parts regclass[])
RETURNS text
AS 'MODULE_PATHNAME', 'stream_ext_distributed_select_sql'
LANGUAGE C STABLE STRICT;

-- create_distributed_view(name, view, servers): a foreign table per server on
-- that node's materialization of VIEW (same schema and name as the local
-- one) and, when VIEW appends (view_catalog.delta), one on that node's
-- delta, and the view NAME that merges their states per group and
-- finalizes them as VIEW does.  Runs as the caller (SECURITY INVOKER): the caller
-- needs USAGE on every foreign server and CREATE in the schema.
CREATE FUNCTION stream_ext.create_distributed_view(name text, view regclass, servers text[])
RETURNS regclass
LANGUAGE plpgsql SECURITY INVOKER
AS $$
DECLARE
    v_schema  text;
    m_schema  text;
    m_name    text;
    d_name    text;
    tbl       text;
    cols      text;
    parts     regclass[] := '{}';
    part      text;
    i         int := 0;
    srv       text;
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'name of the distributed view must not be empty'
            USING ERRCODE = '22023';
    END IF;
    IF cardinality(servers) IS NULL OR cardinality(servers) = 0 THEN
        RAISE EXCEPTION 'a distributed view needs at least one server'
            USING ERRCODE = '22023';
    END IF;
    SELECT n.nspname, c.relname, vn.nspname, dc.relname
      INTO m_schema, m_name, v_schema, d_name
      FROM stream_ext.view_catalog vc
      JOIN pg_class c ON c.oid = vc.matrel
      LEFT JOIN pg_class dc ON dc.oid = vc.delta
      JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_class vcl ON vcl.oid = vc.view
      JOIN pg_namespace vn ON vn.oid = vcl.relnamespace
     WHERE vc.view = create_distributed_view.view;
    IF NOT FOUND THEN
        RAISE EXCEPTION '"%" is not a continuous view', view
            USING ERRCODE = '42809';
    END IF;
    -- the materialization's columns, as the foreign tables' columns
    SELECT string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)),
                      ', ' ORDER BY a.attnum)
      INTO cols
      FROM pg_attribute a
     WHERE a.attrelid = (SELECT matrel FROM stream_ext.view_catalog vc
                          WHERE vc.view = create_distributed_view.view)
       AND a.attnum > 0 AND NOT a.attisdropped;
    FOREACH srv IN ARRAY servers LOOP
        i := i + 1;
        IF srv IS NULL OR NOT EXISTS (SELECT FROM pg_foreign_server s WHERE s.srvname = srv) THEN
            RAISE EXCEPTION 'foreign server "%" does not exist', srv
                USING ERRCODE = '42704',
                      HINT = 'CREATE SERVER ... FOREIGN DATA WRAPPER postgres_fdw, and a user mapping, for every node.';
        END IF;
        -- the node's materialization and, when VIEW appends, its delta (the
        -- node's batches not yet compacted: more states to merge; postgres_fdw
        -- reads both in one remote transaction, one snapshot)
        FOREACH tbl IN ARRAY ARRAY[m_name, d_name] LOOP
            CONTINUE WHEN tbl IS NULL;
            part := format('%s_node%s', name, i) || CASE WHEN tbl = d_name THEN '_delta' ELSE '' END;
            EXECUTE format('CREATE FOREIGN TABLE %I.%I (%s) SERVER %I OPTIONS (schema_name %L, table_name %L)',
                           v_schema, part, cols, srv, m_schema, tbl);
            EXECUTE format('COMMENT ON FOREIGN TABLE %I.%I IS %L', v_schema, part,
                           format('%s of %s on server %s, part of distributed view %s',
                                  CASE WHEN tbl = d_name THEN 'delta' ELSE 'states' END, view, srv, name));
            parts := parts || format('%I.%I', v_schema, part)::regclass;
        END LOOP;
    END LOOP;
    EXECUTE format('CREATE VIEW %I.%I AS %s', v_schema, name,
                   stream_ext.distributed_select_sql(view, parts));
    RETURN format('%I.%I', v_schema, name)::regclass;
END
$$;

-- source_offsets(source): the stored next offset of each partition of a
-- stopped source whose workers have all exited, as {"partition": offset}
-- for the start_offsets option of the source that takes its partitions
-- over (docs/scale-out.md, "Moving partitions").  Refuses (55000) while
-- the source runs or a worker is still alive: its last batch may still
-- commit.  Row-level security shows only the caller's own sources.
CREATE FUNCTION stream_ext.source_offsets(source text)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
AS $$
DECLARE
    st   text;
    live int;
BEGIN
    SELECT s.state, s.workers INTO st, live
      FROM stream_ext.source_status s WHERE s.source = source_offsets.source;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Kafka source "%" does not exist', source
            USING ERRCODE = '42704';
    END IF;
    IF st NOT IN ('stopped', 'failed') OR live > 0 THEN
        RAISE EXCEPTION 'Kafka source "%" is not stopped yet', source
            USING ERRCODE = '55000',
                  DETAIL = format('State %s, %s live worker(s): a batch may still commit and move the offsets.', st, live),
                  HINT = 'Call stream_ext.stop_source() and retry until its workers have exited.';
    END IF;
    RETURN (SELECT coalesce(pg_catalog.jsonb_object_agg(o.partition, o.next_offset ORDER BY o.partition), '{}')
              FROM stream_ext.kafka_offsets o WHERE o.source = source_offsets.source);
END
$$;
