-- stream_ext install script, PostgREST part: expose continuous views in an
-- API schema that PostgREST serves (db-schemas), readable by its anonymous
-- role (db-anon-role).  See docs/postgrest.md.

-- Is the exposed view schema.<name> the pass-through view of cv?  (Its
-- rewrite rule depends on cv.)
CREATE FUNCTION stream_ext._exposed_view(cv regclass, schema name)
    RETURNS regclass
    LANGUAGE sql STABLE
    SET search_path = pg_catalog
AS $$
    SELECT e.oid::regclass
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_class e ON e.relname = c.relname AND e.relkind = 'v'
      JOIN pg_catalog.pg_namespace n ON n.oid = e.relnamespace AND n.nspname = schema
     WHERE c.oid = cv
       AND e.oid <> cv
       AND EXISTS (SELECT 1
                     FROM pg_catalog.pg_rewrite r
                     JOIN pg_catalog.pg_depend d
                       ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = r.oid
                    WHERE r.ev_class = e.oid
                      AND d.refclassid = 'pg_catalog.pg_class'::regclass
                      AND d.refobjid = cv)
$$;

-- The continuous view's catalog row, after checking that the caller owns it.
CREATE FUNCTION stream_ext._check_exposable(cv regclass, action text,
                                            OUT nspname name, OUT relname name,
                                            OUT definition text)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog
AS $$
DECLARE
    owner oid;
BEGIN
    SELECT n.nspname, c.relname, c.relowner, v.definition
      INTO nspname, relname, owner, definition
      FROM stream_ext.view_catalog v
      JOIN pg_catalog.pg_class c ON c.oid = v.view
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE v.view = cv;
    IF NOT FOUND THEN
        RAISE EXCEPTION '"%" is not a continuous view', cv
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Only continuous views (see stream_ext.continuous_views) can be exposed.';
    END IF;
    -- pg_has_role is true for members of the owning role and for superusers
    IF NOT pg_catalog.pg_has_role(current_user, owner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of continuous view "%" to % it', cv, action
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;

CREATE FUNCTION stream_ext._notify_pgrst() RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog
AS $$
BEGIN
    IF coalesce(pg_catalog.current_setting('stream_ext.notify_pgrst', true), 'on') <> 'off' THEN
        PERFORM pg_catalog.pg_notify('pgrst', 'reload schema');
    END IF;
END
$$;

CREATE FUNCTION stream_ext.expose(view regclass, schema name DEFAULT 'api',
                                  role name DEFAULT 'web_anon')
    RETURNS regclass
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog
AS $$
DECLARE
    cv record;
    result regclass;
BEGIN
    IF view IS NULL OR schema IS NULL OR role IS NULL THEN
        RAISE EXCEPTION 'stream_ext.expose: arguments must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO cv FROM stream_ext._check_exposable(view, 'expose');
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = role) THEN
        RAISE EXCEPTION 'role "%" does not exist', role
            USING ERRCODE = 'undefined_object',
                  HINT = format('Create PostgREST''s anonymous role first, e.g. CREATE ROLE %I NOLOGIN; GRANT %I TO authenticator;', role, role);
    END IF;

    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = schema) THEN
        EXECUTE format('CREATE SCHEMA %I', schema);
    END IF;
    result := stream_ext._exposed_view(view, schema);
    IF result IS NULL THEN
        -- fails with 42P07 if schema.<name> is something else
        EXECUTE format('CREATE VIEW %I.%I AS SELECT * FROM %I.%I',
                       schema, cv.relname, cv.nspname, cv.relname);
        result := format('%I.%I', schema, cv.relname)::regclass;
    END IF;
    EXECUTE format('COMMENT ON VIEW %I.%I IS %L', schema, cv.relname, cv.definition);
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', schema, role);
    EXECUTE format('GRANT SELECT ON %I.%I TO %I', schema, cv.relname, role);

    PERFORM stream_ext._notify_pgrst();
    RETURN result;
END
$$;

CREATE FUNCTION stream_ext.unexpose(view regclass, schema name DEFAULT 'api')
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog
AS $$
DECLARE
    cv record;
    exposed regclass;
BEGIN
    IF view IS NULL OR schema IS NULL THEN
        RAISE EXCEPTION 'stream_ext.unexpose: arguments must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO cv FROM stream_ext._check_exposable(view, 'unexpose');
    exposed := stream_ext._exposed_view(view, schema);
    IF exposed IS NULL THEN
        RAISE EXCEPTION 'continuous view "%" is not exposed in schema "%"', view, schema
            USING ERRCODE = 'undefined_table';
    END IF;
    -- the schema stays: it may hold other exposed views
    EXECUTE format('DROP VIEW %I.%I', schema, cv.relname);

    PERFORM stream_ext._notify_pgrst();
END
$$;

-- ---- secondary indexes on continuous views (ddl/indexes.c) ----
-- The materialization column a view column reads, NULL if it is computed
-- when read.
CREATE FUNCTION stream_ext._view_column_source(view regclass, col name)
    RETURNS name
    AS 'MODULE_PATHNAME', 'stream_ext_view_column_source'
    LANGUAGE C STABLE STRICT;

-- A btree index on the materialization for filters and ordering on the
-- given view columns (group keys, or aggregates stored as their result);
-- created as the caller, who must own the continuous view.
CREATE FUNCTION stream_ext.create_index(view regclass, VARIADIC columns name[])
    RETURNS regclass
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog
AS $$
DECLARE
    cv record;
    mrel regclass;
    mrel_nsp name;
    col name;
    src name;
    cols text[] := '{}';
    idxname text;
    suffix int := 0;
BEGIN
    IF view IS NULL OR columns IS NULL OR cardinality(columns) = 0 THEN
        RAISE EXCEPTION 'stream_ext.create_index: a continuous view and at least one column are needed'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO cv FROM stream_ext._check_exposable(view, 'index');
    SELECT v.matrel, n.nspname INTO mrel, mrel_nsp
      FROM stream_ext.view_catalog v
      JOIN pg_catalog.pg_class c ON c.oid = v.matrel
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE v.view = create_index.view;
    FOREACH col IN ARRAY columns LOOP
        IF col IS NULL OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
                                       WHERE attrelid = view AND attname = col
                                         AND attnum > 0 AND NOT attisdropped) THEN
            RAISE EXCEPTION 'column "%" of continuous view "%" does not exist', col, view
                USING ERRCODE = 'undefined_column';
        END IF;
        src := stream_ext._view_column_source(view, col);
        IF src IS NULL THEN
            RAISE EXCEPTION 'column "%" of continuous view "%" is computed when the view is read: it cannot be indexed', col, view
                USING ERRCODE = 'feature_not_supported',
                      HINT = 'Group keys and aggregates kept as their value (count, count(DISTINCT), min, max, ...) can be indexed; avg and other aggregates finalized when read cannot.';
        END IF;
        cols := cols || quote_ident(src);
    END LOOP;
    -- <view>_<columns>_idx, numbered if taken (in the materialization's schema)
    idxname := left(cv.relname || '_' || array_to_string(columns, '_'), 58) || '_idx';
    WHILE EXISTS (SELECT 1 FROM pg_catalog.pg_class c
                   JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = mrel_nsp
                    AND c.relname = CASE WHEN suffix = 0 THEN idxname ELSE idxname || suffix END) LOOP
        suffix := suffix + 1;
    END LOOP;
    IF suffix > 0 THEN
        idxname := idxname || suffix;
    END IF;
    EXECUTE format('CREATE INDEX %I ON %s (%s)', idxname, mrel, array_to_string(cols, ', '));
    RETURN format('%I.%I', mrel_nsp, idxname)::regclass;
END
$$;
