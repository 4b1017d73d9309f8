#!/usr/bin/env python3
"""test/fuzz/view_oracle.py -- a randomized differential oracle for
continuous views.

From a seed it creates a stream with a random set of columns, one to six
continuous views of random supported shapes over it (random settings of
stream_ext.delta_key_index, share_storage, TimeZone at creation), and then
runs random steps: batches loaded with INSERT ... SELECT, COPY and
multi-row VALUES (sizes 1..max, NULLs, duplicate and NULL keys, extreme
values, empty strings), some in transactions rolled back or rolled back to
a savepoint, compactions, two writers at once; fast_batches is set at
random per step.  After each step every view is compared with its defining
query run as plain SQL over the stream (EXCEPT ALL both ways), and reads by
key (unprepared and prepared with a generic plan, key_read_scan on and off)
and ORDER BY ... LIMIT reads (ordered_reads on and off) are compared with
the same reads of the plain query.

A mismatch, an internal error (SQLSTATE XX000 or class 58/F0/P0, "cache
lookup failed", "unexpected"), a crash, or a view refused where its query
runs is a finding: the script prints it with a reproducer (the SQL run,
reduced to the steps and views needed when --reduce is given).

Python 3's standard library only; it drives psql (-X, ON_ERROR_STOP), which
must be in PATH, against the server of PGHOST/PGPORT/PGUSER/PGDATABASE.
Each seed works in a schema of its own (vo_<seed>), dropped when it passed.

  view_oracle.py --seeds 1-20 [--steps 12] [--max-rows 20000] [--reduce]

Exit status: 0 when every seed passed, 1 when something was found.
"""
import argparse
import glob
import json
import os
import random
import re
import subprocess
import sys
import time
import zlib

PSQL = os.environ.get('PSQL', 'psql')
# where the server writes and reads the files of COPY steps (make test:
# the run's temp dir, which the server's OS user owns)
COPY_DIR = os.environ.get('STREAM_EXT_TMP', '/tmp')

# SQLSTATE classes a CREATE VIEW may be refused with (a shape not
# supported: 0A, 42; data the backfill cannot compute: 22, checked against
# the plain query) and a load may fail with (data the views' expressions
# cannot compute: 22, checked against the plain queries; a deadlock or lock
# timeout between two writers: 40, 55).  Anything else is a finding: a
# stream has no constraints, so only maintenance can fail a load.
CREATE_CLASSES = ('0A', '22', '42')
LOAD_CLASSES = ('22', '40', '55')


# clean refusals seen: (SQLSTATE, message) -> an example query
REFUSALS = {}
# shapes of the views checked: feature -> count
COVERAGE = {}


def cover(v):
    q, ddl = v['query'], v['ddl']
    feats = ['keys=%d' % v['nkeys']]
    for f, pat in (('hop', 'hop('), ('tumble', 'tumble('), ('date_bin', 'date_bin('), ('date_trunc', 'date_trunc('),
                   ('join', 'JOIN dim'), ('where', ' WHERE '), ('having', 'HAVING'), ('filter', 'FILTER'),
                   ('count_distinct', 'DISTINCT'), ('lateness', 'allowed_lateness'), ('avg', 'avg('),
                   ('stddev/var', 'std'), ('bool_and/or', 'bool_'), ('bit_and/or', 'bit_'), ('sum', 'sum('),
                   ('min/max', 'min('), ('agg_expression', ' * 2 + 1'),
                   ('delta_key_index=hash', 'delta_key_index = hash'), ('delta_key_index=off', 'delta_key_index = off'),
                   ('share_storage=off', 'share_storage = off')):
        if pat in q or pat in ddl:
            feats.append(f)
    if v.get('rollup_of'):
        feats.append('rollup')
    if v['hidden']:
        feats.append('hidden_key')
    for f in feats:
        COVERAGE[f] = COVERAGE.get(f, 0) + 1


class Finding(Exception):
    pass


def psql(sql, schema=None, check=True, timeout=600):
    """Run sql in one psql session; returns (rc, stdout, stderr)."""
    pre = "\\set ON_ERROR_STOP 1\n\\set VERBOSITY verbose\nSET client_min_messages = warning;\n"
    if schema:
        pre += "SET search_path = %s, public;\n" % schema
    p = subprocess.run([PSQL, '-X', '-q', '-A', '-t', '-F', '\x1f', '-v', 'ON_ERROR_STOP=1'],
                       input=pre + sql, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("psql failed (%d): %s\n--- SQL ---\n%s" % (p.returncode, p.stderr, sql[:4000]))
    return p.returncode, p.stdout, p.stderr


def sqlstate_of(stderr):
    m = re.search(r'ERROR:\s+([0-9A-Z]{5}):', stderr)
    return m.group(1) if m else None


def is_internal(stderr):
    st = sqlstate_of(stderr)
    if 'server closed the connection unexpectedly' in stderr or 'terminating connection' in stderr:
        return 'crash'
    if st is None:
        return None
    if st == 'XX000' or st[:2] in ('58', 'F0', 'P0', 'XX'):
        return 'internal error ' + st
    low = stderr.lower()
    if 'cache lookup failed' in low or 'unexpected' in low or 'unrecognized node' in low:
        return 'internal-looking error ' + st
    return None


def lit(s):
    return "'" + s.replace("'", "''") + "'"


# ---------------------------------------------------------------- shapes
TYPES = ['int', 'bigint', 'numeric', 'float8', 'text', 'bool', 'timestamptz']
FLOATY = ('double precision', 'real')


class Gen:
    def __init__(self, seed, max_rows):
        self.seed = seed
        self.r = random.Random(seed)
        self.max_rows = max_rows
        self.schema = 'vo_%d' % seed
        r = self.r
        # columns: at least one int, text and timestamptz (most shapes need
        # them), plus a random selection
        cols = ['int', 'text', 'timestamptz'] + [r.choice(TYPES) for _ in range(r.randint(1, 5))]
        r.shuffle(cols)
        self.cols = []
        for i, t in enumerate(cols):
            self.cols.append(('c%d_%s' % (i, t.replace('timestamptz', 'ts').replace('float8', 'f')), t))
        self.kc = r.choice([1, 3, 10, 50, 1000, 100000])   # key cardinality
        self.nullpct = r.choice([0, 2, 10, 40])
        self.extremes = r.random() < 0.4
        self.long_text = r.random() < 0.15

    def cols_of(self, *types):
        return [c for c, t in self.cols if t in types]

    # an expression for column (c, t) of row i (int) in batch b (int)
    def value_expr(self, c, t, b, bseed):
        h = "abs(hashint8(i::bigint * %d + %d)::bigint)" % (1 + zlib.crc32(c.encode()) % 1000, bseed)
        kc = self.kc
        nul = "CASE WHEN %s %% 100 < %d THEN NULL ELSE " % (h.replace('i::bigint', '(i::bigint + 17)'), self.nullpct)
        ext = self.extremes
        e = "(%s)" % h
        if t == 'int':
            v = "((%s %% %d) - %d)::int" % (e, kc, kc // 4)
            if ext:
                v = "CASE %s %% 53 WHEN 1 THEN 2147483647 WHEN 2 THEN -2147483647 ELSE %s END" % (e, v)
        elif t == 'bigint':
            v = "((%s %% %d) - %d)::bigint * 1000003" % (e, kc, kc // 4)
            if ext:
                v = "CASE %s %% 53 WHEN 1 THEN 9223372036854775807 WHEN 2 THEN -9223372036854775807 ELSE %s END" % (e, v)
        elif t == 'numeric':
            v = "((%s %% %d) - %d)::numeric / 100" % (e, max(kc, 7) * 10, kc)
            if ext:
                v = ("CASE %s %% 61 WHEN 1 THEN 'NaN'::numeric WHEN 2 THEN 'Infinity'::numeric "
                     "WHEN 3 THEN 1e30::numeric WHEN 4 THEN 0.000000001 ELSE %s END" % (e, v))
        elif t == 'float8':
            # multiples of 1/4, small: sums are exact in any order
            v = "((%s %% %d) - %d)::float8 / 4" % (e, max(kc, 5) * 4, kc)
            if ext:
                v = ("CASE %s %% 67 WHEN 1 THEN 'Infinity'::float8 WHEN 2 THEN '-Infinity'::float8 "
                     "WHEN 3 THEN 'NaN'::float8 ELSE %s END" % (e, v))
        elif t == 'text':
            v = "CASE %s %% 5 WHEN 0 THEN 'K' ELSE 'k' END || (%s %% %d)" % (e, e, kc)
            v = "CASE %s %% 29 WHEN 1 THEN '' WHEN 2 THEN 'Ä' || (%s %% 3) WHEN 3 THEN 'ä' || (%s %% 3) ELSE %s END" % (e, e, e, v)
            if self.long_text:
                v = "CASE %s %% 997 WHEN 3 THEN repeat('w', 3000) || (%s %% 3) ELSE %s END" % (e, e, v)
        elif t == 'bool':
            v = "(%s %% 3 = 0)" % e
        elif t == 'timestamptz':
            span = self.r.choice([3600, 86400, 86400 * 40])
            v = "timestamptz '2024-03-30 22:00:00+00' + (%s %% %d) * interval '1 second'" % (e, span)
            if ext:
                v = ("CASE %s %% 71 WHEN 1 THEN 'infinity'::timestamptz WHEN 2 THEN '-infinity'::timestamptz "
                     "WHEN 3 THEN '1900-01-01 00:00:00.5+00' WHEN 4 THEN '2262-04-11 23:47:16+00' ELSE %s END" % (e, v))
        return nul + v + " END"

    def batch_select(self, n, bseed, start=1):
        exprs = [self.value_expr(c, t, 0, bseed) + " AS " + c for c, t in self.cols]
        return "SELECT %s FROM generate_series(%d, %d) AS i" % (", ".join(exprs), start, start + n - 1)

    def colnames(self):
        return ", ".join(c for c, _ in self.cols)

    # -------------------------------------------------------------- view shapes
    def key_exprs(self):
        r = self.r
        out = []
        for c, t in self.cols:
            if t == 'int':
                out += [c, '%s %% 7' % c, 'abs(%s) / 3' % c]
                if r.random() < 0.1:
                    out.append('%s + 1' % c)          # overflows at the extreme value
            elif t == 'bigint':
                out += [c, '%s %% 5' % c]
            elif t == 'text':
                out += [c, 'lower(%s)' % c, 'length(%s)' % c, "coalesce(%s, '?')" % c]
            elif t == 'bool':
                out += [c]
            elif t == 'numeric':
                out += ['round(%s, 1)' % c, c]
            elif t == 'float8':
                out += ['floor(%s)' % c]
            elif t == 'timestamptz':
                out += ["date_trunc('hour', %s)" % c, "date_bin('15 minutes', %s, '2000-01-01')" % c,
                        "stream_ext.tumble(%s, '10 minutes')" % c, "date_trunc('day', %s)" % c, c]
        r.shuffle(out)
        return out

    def agg_exprs(self):
        r = self.r
        out = ['count(*)']
        for c, t in self.cols:
            out.append('count(%s)' % c)
            if t in ('int', 'bigint', 'numeric', 'float8'):
                out += ['sum(%s)' % c, 'avg(%s)' % c, 'min(%s)' % c, 'max(%s)' % c]
                if t in ('int', 'bigint', 'numeric'):
                    out += ['stddev(%s)' % c, 'var_pop(%s)' % c]
                else:
                    out += ['stddev(%s)' % c]
                if t == 'int' and r.random() < 0.1:
                    out.append('sum(%s * 2)' % c)      # overflows at the extreme value
                if t in ('int', 'bigint'):
                    out += ['bit_or(%s)' % c, 'bit_and(%s)' % c, 'count(DISTINCT %s)' % c]
            elif t == 'text':
                out += ['min(%s)' % c, 'max(%s)' % c, 'count(DISTINCT %s)' % c]
                if r.random() < 0.05:
                    out.append("string_agg(%s, ',')" % c)      # refused: no combine function
            elif t == 'bool':
                out += ['bool_and(%s)' % c, 'bool_or(%s)' % c, 'every(%s)' % c]
            elif t == 'timestamptz':
                out += ['min(%s)' % c, 'max(%s)' % c, 'count(DISTINCT %s)' % c]
        if r.random() < 0.03:
            out.append('array_agg(%s)' % self.cols[0][0])           # refused
        return out

    def pred(self):
        r = self.r
        c, t = r.choice(self.cols)
        if t in ('int', 'bigint'):
            return r.choice(['%s > 0' % c, '%s %% 3 <> 1' % c, '%s IS NOT NULL' % c, '%s BETWEEN -5 AND 50' % c])
        if t == 'numeric':
            return r.choice(['%s > 0.5' % c, '%s IS NULL' % c])
        if t == 'float8':
            return r.choice(['%s < 10' % c, '%s >= 0' % c])
        if t == 'text':
            return r.choice(["%s <> ''" % c, "%s LIKE 'k1%%'" % c, "lower(%s) < 'k5'" % c])
        if t == 'bool':
            return r.choice([c, 'NOT %s' % c, '%s IS NOT TRUE' % c])
        return r.choice(["%s >= '2024-03-31'" % c, "extract(hour from %s) < 12" % c])

    def view(self, vi):
        """One view: (name, create options, query, nkeys, hidden, tz)"""
        r = self.r
        name = 'v%d' % vi
        keys = []
        nkeys = r.choice([0, 1, 1, 2, 2, 3])
        pool = self.key_exprs()
        for k in pool[:nkeys]:
            keys.append(k)
        hop = None
        ts_cols = self.cols_of('timestamptz')
        if r.random() < 0.12 and ts_cols:
            hop = (r.choice(ts_cols), r.choice([("'1 hour'", "'20 minutes'"), ("'30 minutes'", "'30 minutes'"),
                                                ("'10 minutes'", "'4 minutes'")]))
        aggs = self.agg_exprs()
        frm = 's'
        if r.random() < 0.12 and not hop:
            # the stream joined to a table that never changes (docs/joins.md):
            # the same join in the plain query
            ic = r.choice(self.cols_of('int'))
            frm = 's %s dim d ON d.id = s.%s %% 10' % (r.choice(['JOIN', 'LEFT JOIN']), ic)
            if r.random() < 0.5:
                keys.append('d.name')
            aggs += ['sum(d.w)', 'max(d.name)', 'count(d.id)']
        sel = []
        bare = []           # (alias, aggregate) of plain aggregate columns
        naggs = r.randint(0, 5) if keys else r.randint(1, 5)
        chosen = r.sample(aggs, min(naggs, len(aggs)))
        for i, a in enumerate(chosen):
            if r.random() < 0.15 and 'DISTINCT' not in a:
                a = a + ' FILTER (WHERE %s)' % self.pred()
            elif r.random() < 0.05:
                a = a + ' FILTER (WHERE %s)' % self.pred()
            if r.random() < 0.08 and a.startswith('count'):
                a = '%s * 2 + 1' % a
            else:
                bare.append(('a%d' % i, a))
            sel.append('%s AS a%d' % (a, i))
        if r.random() < 0.05 and chosen:
            sel.append("count(*)::text || ':' || coalesce(max(%s::text), '-') AS lbl" % self.cols[0][0])
        hidden = bool(keys) and r.random() < 0.1
        keysel = []
        for i, k in enumerate(keys):
            if hidden and i == len(keys) - 1:
                continue
            keysel.append('%s AS k%d' % (k, i + 1))
        if hop:
            keysel.insert(0, 'w.window_start AS wstart')
        if not keysel and not sel:
            sel.append('count(*) AS a0')
        q = 'SELECT ' + ', '.join(keysel + sel) + ' FROM ' + frm
        if hop:
            q += ', stream_ext.hop(%s, %s, %s) AS w(window_start)' % (hop[0], hop[1][0], hop[1][1])
        where = None
        if r.random() < 0.3:
            where = self.pred()
            q += ' WHERE ' + where
        groups = (['w.window_start'] if hop else []) + keys
        if groups:
            q += ' GROUP BY ' + ', '.join(groups)
        having = r.random() < 0.1 and chosen
        if having:
            q += ' HAVING count(*) > %d' % r.choice([1, 2, 5])
        opts = ['continuous']
        if r.random() < 0.1 and (hop or any('tumble' in k for k in keys)) and not self.extremes:
            # never late: same results, through the lateness path.  (Not
            # with extreme values: an event time of 'infinity' moves the
            # watermark to infinity, and every later row is late, by design.)
            opts.append("allowed_lateness = '36500 days'")
        gucs = []
        gucs.append("SET stream_ext.delta_key_index = %s" % r.choice(['on', 'on', 'hash', 'off']))
        gucs.append("SET stream_ext.share_storage = %s" % r.choice(['on', 'on', 'off']))
        tz = r.choice(['UTC', 'UTC', 'America/New_York', 'Asia/Kolkata'])
        gucs.append("SET TimeZone = %s" % lit(tz))
        ddl = ";\n".join(gucs) + ";\nCREATE VIEW %s WITH (%s) AS %s;\n" % (name, ', '.join(opts), q)
        nk = len(keysel)
        return dict(name=name, ddl=ddl, query=q, nkeys=nk, hidden=hidden, tz=tz,
                    keycols=[s.rsplit(' AS ', 1)[1] for s in keysel],
                    bare=bare, where=where, having=having, hop=bool(hop),
                    keyexprs=dict(('k%d' % (i + 1), k) for i, k in enumerate(keys)), frm=frm)


    def rollup(self, vi, base):
        """A view over the continuous view base (a roll-up): a subset of its
        key columns, and per aggregate column sum() (of a count or sum),
        min()/max() (of a min/max) or stream_ext.combine().  Its oracle is
        the composed query over the stream: base's aggregates over the
        coarse groups."""
        r = self.r
        name = 'v%d' % vi
        keys = [k for k in base['keycols'] if r.random() < 0.6]
        sel, plain = [], []
        for k in keys:
            sel.append('%s AS %s' % (k, k))
            plain.append('%s AS %s' % (base['keyexprs'][k], k))
        for i, (alias, agg) in enumerate(r.sample(base['bare'], r.randint(1, len(base['bare'])))):
            fn = agg.split('(', 1)[0]
            if fn in ('count', 'sum') and 'DISTINCT' not in agg and r.random() < 0.7:
                outer = 'sum(%s)' % alias
            elif fn in ('min', 'max') and r.random() < 0.7:
                outer = '%s(%s)' % (fn, alias)
            else:
                outer = 'stream_ext.combine(%s)' % alias
            sel.append('%s AS r%d' % (outer, i))
            if not keys and outer.startswith('sum('):
                # sum() over no rows of the finer view is NULL, as in SQL
                # over that view, where count() over no stream rows is 0
                plain.append('CASE WHEN count(*) > 0 THEN %s END AS r%d' % (agg, i))
            else:
                plain.append('%s AS r%d' % (agg, i))
        q = 'SELECT %s FROM %s' % (', '.join(sel), base['name'])
        pq = 'SELECT %s FROM %s' % (', '.join(plain), base['frm'])
        if base['where']:
            pq += ' WHERE ' + base['where']
        if keys:
            q += ' GROUP BY ' + ', '.join(keys)
            pq += ' GROUP BY ' + ', '.join(base['keyexprs'][k] for k in keys)
        ddl = "SET TimeZone = %s;\nCREATE VIEW %s WITH (continuous) AS %s;\n" % (lit(base['tz']), name, q)
        return dict(name=name, ddl=ddl, query=pq, nkeys=len(keys), hidden=False, tz=base['tz'],
                    keycols=keys, bare=[], where=None, having=False, hop=False,
                    keyexprs=dict((k, base['keyexprs'][k]) for k in keys), rollup_of=base['name'],
                    frm=None)


# ---------------------------------------------------------------- the run
SETUP = r"""
CREATE OR REPLACE FUNCTION public.vo_f(x float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN x IS NULL OR x = 0 OR x = 'NaN' OR x = 'Infinity' OR x = '-Infinity' THEN x
              ELSE round(x::numeric, greatest(0, 9 - floor(log(abs(x::numeric)))::int))::float8 END $$;
-- rows of the view not in the query and of the query not in the view (at
-- most lim of each), or the SQLSTATEs when reading either fails; 'ok' when
-- both fail alike
CREATE OR REPLACE FUNCTION public.vo_cmp(v text, q text, sel text, tz text, lim int DEFAULT 200)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE qerr text; verr text; n bigint;
BEGIN
  PERFORM set_config('TimeZone', tz, true);
  BEGIN
    EXECUTE format('SELECT count(*) FROM (%s) s WHERE s::text IS NOT NULL', q) INTO n;
  EXCEPTION WHEN OTHERS THEN qerr := SQLSTATE || ' ' || SQLERRM;
  END;
  BEGIN
    EXECUTE format('SELECT count(*) FROM %s s WHERE s::text IS NOT NULL', v) INTO n;
  EXCEPTION WHEN OTHERS THEN verr := SQLSTATE || ' ' || SQLERRM;
  END;
  IF qerr IS NOT NULL OR verr IS NOT NULL THEN
    IF left(qerr, 5) IS NOT DISTINCT FROM left(verr, 5) THEN RETURN; END IF;
    RETURN NEXT 'E' || json_build_object('query', qerr, 'view', verr)::text;
    RETURN;
  END IF;
  RETURN QUERY EXECUTE format(
    'SELECT ''V'' || row_to_json(d)::text FROM (SELECT * FROM ((SELECT %1$s FROM %2$s) EXCEPT ALL (SELECT %1$s FROM (%3$s) s)) x LIMIT %4$s) d
     UNION ALL
     SELECT ''Q'' || row_to_json(d)::text FROM (SELECT * FROM ((SELECT %1$s FROM (%3$s) s) EXCEPT ALL (SELECT %1$s FROM %2$s)) x LIMIT %4$s) d',
    sel, v, q, lim);
END $$;
"""


def parse_blocks(out):
    """psql output of "\\echo @@label", a query, "\\echo @@end :SQLSTATE":
    label -> (lines, sqlstate)"""
    blocks = {}
    cur = None
    for l in out.splitlines():
        if l.startswith('@@end '):
            if cur is not None:
                blocks[cur] = (blocks[cur][0], l[6:].strip())
            cur = None
        elif l.startswith('@@'):
            cur = l[2:]
            blocks[cur] = ([], None)
        elif cur is not None:
            blocks[cur][0].append(l)      # an empty line is a row too ('')
    return blocks


def close(a, b, isfloat):
    if a == b:
        return True
    if not isfloat or a is None or b is None:
        return False
    try:
        fa, fb = float(a), float(b)
    except (TypeError, ValueError):
        return False
    if fa != fa and fb != fb:
        return True
    return abs(fa - fb) <= 1e-7 * max(abs(fa), abs(fb), 1e-300)


def rows_match(vrows, qrows, floatcols):
    """Pair view-only rows with query-only rows equal but for float rounding."""
    # equal rows first, as a multiset (a read may return thousands)
    key = lambda row: json.dumps(row, sort_keys=True, default=str)
    counts = {}
    for q in qrows:
        counts.setdefault(key(q), []).append(q)
    rest_v = []
    for v in vrows:
        same = counts.get(key(v))
        if same:
            same.pop()
        else:
            rest_v.append(v)
    vrows = rest_v
    qrows = [q for qs in counts.values() for q in qs]
    left = list(qrows)
    unmatched = []
    for v in vrows:
        for i, q in enumerate(left):
            if set(v) == set(q) and all(close(v[c], q[c], c in floatcols) for c in v):
                del left[i]
                break
        else:
            unmatched.append(v)
    return unmatched, left


class Run:
    def __init__(self, seed, args):
        self.seed = seed
        self.args = args
        self.g = Gen(seed, args.max_rows)
        self.schema = self.g.schema
        self.script = []          # (kind, sql, tag) replayable steps
        self.views = []
        self.log = []
        self.bseq = 0

    def say(self, msg):
        self.log.append(msg)
        if self.args.verbose:
            print('[%d] %s' % (self.seed, msg), flush=True)

    def exec_step(self, sql, tag, expect_ok=False, record=True):
        rc, out, err = psql(sql, self.schema, check=False)
        bad = is_internal(err)
        if bad:
            raise Finding('%s in step %s:\n%s' % (bad, tag, err.strip()[-3000:]))
        if rc != 0:
            st = sqlstate_of(err)
            ok = CREATE_CLASSES if tag.startswith('view:') else LOAD_CLASSES
            if expect_ok or st is None or st[:2] not in ok:
                self.script.append(('step', sql, tag + ' (fails)'))
                raise Finding('step %s failed with %s:\n%s%s' % (
                    tag, st, sql if tag.startswith('view:') else '', err.strip()[-3000:]))
        if record:
            self.script.append(('step', sql, tag))
        return rc, out, err

    # ------------------------------------------------------------ set-up
    def setup(self):
        psql("DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s;" % (self.schema, self.schema) + SETUP)
        cols = ", ".join("%s %s" % (c, t) for c, t in self.g.cols)
        sql = ("SELECT stream_ext.create_stream('s', %s);\nSELECT stream_ext.set_retention('s', NULL);\n"
               "CREATE TABLE dim (id int PRIMARY KEY, name text, w int);\n"
               "INSERT INTO dim SELECT i, 'd' || (i %% 4), i * 10 FROM generate_series(0, 7) i;\n"
               % (lit(cols),))
        self.exec_step(sql, 'stream', expect_ok=True)

    def add_view(self, vi):
        bases = [b for b in self.views if b['keycols'] and b['bare'] and not (b['hop'] or b['having'] or b['hidden']
                                                                             or b.get('rollup_of'))
                 and b['frm'] == 's']
        if bases and self.g.r.random() < 0.3:
            v = self.g.rollup(vi, self.g.r.choice(bases))
        else:
            v = self.g.view(vi)
        rc, out, err = self.exec_step(v['ddl'], 'view:' + v['name'], record=False)
        if rc != 0:
            # refused: the shape (or the data already in the stream) is not
            # supported; the plain query must fail the same way or the shape
            # must be one the docs call unsupported
            st = sqlstate_of(err)
            self.say('view %s refused (%s): %s' % (v['name'], st, v['query']))
            if st[:2] == '22':
                # a data error: the plain query must fail too
                rc2, _, err2 = psql("SET TimeZone = %s;\nSELECT count(*) FROM (%s) s WHERE s::text IS NOT NULL;" % (lit(v['tz']), v['query']),
                                    self.schema, check=False)
                if rc2 == 0:
                    raise Finding('view %s refused with %s, but its query runs:\n%s\n%s'
                                  % (v['name'], st, v['ddl'], err.strip()))
            m = re.search(r'ERROR:\s+\w+: (.*)', err)
            REFUSALS[(st, m.group(1) if m else err.strip()[:200])] = v['query']
            self.g.__dict__.setdefault('refused', []).append((st, v['query']))
            return
        self.script.append(('step', v['ddl'], 'view:' + v['name']))
        self.views.append(v)
        self.say('view %s: %s' % (v['name'], v['ddl'].replace('\n', ' ')))

    # ------------------------------------------------------------ steps
    def batch_size(self):
        r = self.g.r
        return r.choice([0, 1, 1, 2, 5, 10, 50, 100, 500, 1000, 5000, self.args.max_rows])

    def one_load(self, r, n):
        """SQL loading n rows (one statement), plus the COPY data if any."""
        self.bseq += 1
        bseed = self.seed * 1000 + self.bseq
        how = r.choice(['select', 'select', 'copy', 'values'])
        if how == 'values' and n > 300:
            how = 'select'
        sel = self.g.batch_select(n, bseed)
        if how == 'select':
            return "INSERT INTO s (%s) %s;\n" % (self.g.colnames(), sel)
        if how == 'copy':
            # COPY from a file the server writes itself (psql's \copy would do
            # too, but the data stays in the replayable script this way)
            f = lit(os.path.join(COPY_DIR, 'vo_%s_%d.csv' % (self.schema, self.bseq)))
            return ("COPY (%s) TO %s WITH (FORMAT csv);\n"
                    "COPY s (%s) FROM %s WITH (FORMAT csv);\n"
                    % (sel, f, self.g.colnames(), f))
        # VALUES: the rows computed now, written as literals
        rc, out, _ = psql("SELECT %s FROM (%s) x;" % (
            ", ".join("quote_nullable(%s)" % c for c, _ in self.g.cols), sel), self.schema)
        rows = [l.split('\x1f') for l in out.splitlines() if l]
        if not rows:
            return "SELECT 1;\n"
        return "INSERT INTO s (%s) VALUES\n%s;\n" % (
            self.g.colnames(), ",\n".join("(" + ", ".join(v for v in row) + ")" for row in rows))

    def step(self, si):
        r = self.g.r
        kind = r.choice(['load', 'load', 'load', 'load', 'txn', 'rollback', 'savepoint', 'compact',
                         'concurrent', 'multi'])
        fast = "SET stream_ext.fast_batches = %s;\n" % r.choice(['on', 'on', 'off'])
        if r.random() < 0.2:
            # backpressure: the writer compacts a delta past this many rows
            fast += "SET stream_ext.compact_threshold = %d;\n" % r.choice([1, 50, 1000])
        if kind == 'load':
            sql = fast + self.one_load(r, self.batch_size())
        elif kind == 'multi':
            sql = fast + "".join(self.one_load(r, self.batch_size()) for _ in range(r.randint(2, 4)))
        elif kind == 'txn':
            sql = fast + "BEGIN;\n" + self.one_load(r, self.batch_size()) + self.one_load(r, self.batch_size())
            if r.random() < 0.3 and self.views:
                sql += "SELECT stream_ext.compact(%s);\n" % lit(r.choice(self.views)['name'])
            sql += "COMMIT;\n"
        elif kind == 'rollback':
            sql = fast + "BEGIN;\n" + self.one_load(r, self.batch_size())
            if r.random() < 0.3 and self.views:
                sql += "SELECT stream_ext.compact(%s);\n" % lit(r.choice(self.views)['name'])
            sql += self.one_load(r, self.batch_size()) + "ROLLBACK;\n"
        elif kind == 'savepoint':
            sql = (fast + "BEGIN;\n" + self.one_load(r, self.batch_size()) + "SAVEPOINT sp;\n"
                   + self.one_load(r, self.batch_size()))
            if r.random() < 0.3 and self.views:
                sql += "SELECT stream_ext.compact(%s);\n" % lit(r.choice(self.views)['name'])
            sql += "ROLLBACK TO SAVEPOINT sp;\n" + self.one_load(r, self.batch_size()) + "COMMIT;\n"
        elif kind == 'compact':
            if not self.views:
                return
            sql = "".join("SELECT stream_ext.compact(%s);\n" % lit(v['name'])
                          for v in r.sample(self.views, r.randint(1, len(self.views))))
        elif kind == 'concurrent':
            a = fast + "BEGIN;\n" + self.one_load(r, self.batch_size()) + "SELECT pg_sleep(0.05);\n" + \
                self.one_load(r, self.batch_size()) + "COMMIT;\n"
            b = fast + self.one_load(r, self.batch_size()) + self.one_load(r, self.batch_size())
            if r.random() < 0.5 and self.views:
                b += "SELECT stream_ext.compact(%s);\n" % lit(r.choice(self.views)['name'])
            self.concurrent(a, b, 'step%d' % si)
            return
        rc, _, err = self.exec_step(sql, 'step%d:%s' % (si, kind))
        if rc != 0 and kind in ('load', 'multi') and self.views:
            self.check_failed_load(sql, err)

    def check_failed_load(self, sql, err):
        """A load failed with a data exception: some view's query over the
        stream's rows plus the batch must fail too (run as plain SQL over a
        temporary copy)."""
        chk = re.sub(r'\b(INSERT INTO|COPY) s \(', r'\1 s_chk (', sql)
        qs = ""
        for v in self.views:
            qs += ("SAVEPOINT q;\nSET LOCAL TimeZone = %s;\n"
                   "SELECT count(*) FROM (%s) x WHERE x::text IS NOT NULL;\nSELECT '@@ok';\nROLLBACK TO q;\n"
                   % (lit(v['tz']), re.sub(r'\bFROM s\b', 'FROM s_chk', v['query'])))
        script = ("BEGIN;\nCREATE TEMP TABLE s_chk AS SELECT * FROM s;\n" + chk + "\\set ON_ERROR_STOP 0\n"
                  + qs + "ROLLBACK;\n")
        rc, out, err2 = psql(script, self.schema, check=False)
        if out.count('@@ok') == len(self.views):
            raise Finding('a load failed (%s) but every view query runs over the rows:\n%s\n%s'
                          % (sqlstate_of(err), err.strip()[-1500:], sql[:3000]))

    def concurrent(self, a, b, tag):
        pre = "\\set ON_ERROR_STOP 1\n\\set VERBOSITY verbose\nSET client_min_messages = warning;\nSET search_path = %s, public;\n" % self.schema
        procs = [subprocess.Popen([PSQL, '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1'], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in (a, b)]
        outs = [p.communicate(pre + s, timeout=600) for p, s in zip(procs, (a, b))]
        for p, (o, e), s in zip(procs, outs, (a, b)):
            bad = is_internal(e)
            if bad:
                raise Finding('%s in concurrent %s:\n%s' % (bad, tag, e.strip()[-3000:]))
            if p.returncode != 0:
                st = sqlstate_of(e)
                if st is None or st[:2] not in LOAD_CLASSES:
                    raise Finding('concurrent %s failed with %s:\n%s' % (tag, st, e.strip()[-3000:]))
        self.script.append(('concurrent', (a, b), tag))

    # ------------------------------------------------------------ checks
    def coltypes(self, v):
        rc, out, _ = psql("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                          "WHERE attrelid = '%s.%s'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;"
                          % (self.schema, v['name']))
        return [tuple(l.split('\x1f')) for l in out.splitlines() if l]

    def sel_list(self, types):
        return ", ".join("public.vo_f(%s) AS %s" % (c, c) if t in FLOATY else c for c, t in types)

    def check_full(self, v, types):
        floatcols = {c for c, t in types if t in FLOATY}
        sql = "SELECT public.vo_cmp(%s, %s, %s, %s);" % (
            lit(self.schema + '.' + v['name']), lit(v['query']), lit(self.sel_list(types)), lit(v['tz']))
        rc, out, err = psql(sql, self.schema, check=False)
        if rc != 0:
            bad = is_internal(err)
            raise Finding('comparing %s failed (%s):\n%s' % (v['name'], bad, err.strip()[-2000:]))
        vrows, qrows = [], []
        for l in out.splitlines():
            if not l:
                continue
            if l[0] == 'E':
                e = json.loads(l[1:])
                if is_internal('ERROR:  %s:' % (e['view'] or '')[:5]) or 'cache lookup' in (e['view'] or ''):
                    raise Finding('reading %s: internal error: %s' % (v['name'], e))
                raise Finding('view %s and its query fail differently: %s' % (v['name'], e))
            (vrows if l[0] == 'V' else qrows).append(json.loads(l[1:]))
        um_v, um_q = rows_match(vrows, qrows, floatcols)
        if um_v or um_q:
            raise Finding('view %s differs from its query:\n  only in view (%d): %s\n  only in query (%d): %s'
                          % (v['name'], len(um_v), json.dumps(um_v[:10]), len(um_q), json.dumps(um_q[:10])))

    def run_blocks(self, script, what):
        """script run in the seed's schema: its labelled result blocks
        (parse_blocks()) and psql's process; an internal error is a finding
        about what"""
        p = subprocess.run([PSQL, '-X', '-q', '-A', '-t', '-F', '\x1f'],
                           input="SET client_min_messages = warning;\nSET search_path = %s, public;\n" % self.schema
                           + script, capture_output=True, text=True, timeout=600)
        bad = is_internal(p.stderr)
        if bad:
            raise Finding('%s: %s:\n%s' % (what, bad, p.stderr.strip()[-3000:]))
        return parse_blocks(p.stdout), p

    def check_reads(self, v, types):
        """Reads by key and ORDER BY ... LIMIT, on the view and on the query."""
        r = self.g.r
        keys = v['keycols']
        if not keys:
            return
        floatcols = {c for c, t in types if t in FLOATY}
        tmap = dict(types)
        q = v['query']
        # a few key tuples that exist (and one that may not)
        # (chosen by a hash of the row and the seed: the same rows every run)
        rc, out, _ = psql("SET TimeZone = %s;\nSELECT %s FROM (%s) s ORDER BY md5(s::text || '%d') LIMIT 3;" % (
            lit(v['tz']), ", ".join("quote_nullable(%s::text)" % k for k in keys), q, self.seed),
            self.schema, check=False)
        if rc != 0:
            return
        tuples = [l.split('\x1f') for l in out.splitlines() if l]
        reads = []
        for tup in tuples:
            if any(x == 'NULL' for x in tup):
                # k IS NULL reads (not the key-read node, but the filtered merge)
                conds = " AND ".join("%s IS NULL" % k if x == 'NULL' else "%s = %s::%s" % (k, x, tmap[k])
                                     for k, x in zip(keys, tup))
                reads.append(('where', conds, None))
                continue
            conds = " AND ".join("%s = %s::%s" % (k, x, tmap[k]) for k, x in zip(keys, tup))
            reads.append(('where', conds, None))
            reads.append(('prepared', ", ".join(tmap[k] for k in keys), (keys, tup)))
        order_cols = ", ".join(keys)
        desc = ", ".join(k + " DESC" for k in keys)
        lim = r.choice([1, 3, 10])
        ordered = not v['hidden']  # keys unique: a total order
        script = "\\set ON_ERROR_STOP 0\nSET TimeZone = %s;\n" % lit(v['tz'])
        checks = []

        def add(label, view_sql, query_sql, pre=""):
            nonlocal script
            checks.append(label)
            script += pre + "\\echo @@%s:V\n%s\n\\echo @@end :SQLSTATE\n" % (label, view_sql)
            script += "\\echo @@%s:Q\n%s\n\\echo @@end :SQLSTATE\n" % (label, query_sql)

        for i, (kind, conds, extra) in enumerate(reads):
            for krs in ('on', 'off'):
                g = "SET stream_ext.key_read_scan = %s;\n" % krs
                if kind == 'where':
                    add('w%d%s' % (i, krs), "SELECT * FROM %s WHERE %s;" % (v['name'], conds),
                        "SELECT * FROM (%s) s WHERE %s;" % (q, conds), g)
                else:
                    ks, tup = extra
                    pc = " AND ".join("%s = $%d" % (k, j + 1) for j, k in enumerate(ks))
                    args = ", ".join("%s::%s" % (x, tmap[k]) for k, x in zip(ks, tup))
                    pre = g + "SET plan_cache_mode = %s;\nDEALLOCATE ALL;\nPREPARE vo_p(%s) AS SELECT * FROM %s WHERE %s;\n" % (
                        r.choice(['force_generic_plan', 'auto', 'force_custom_plan']), conds, v['name'], pc)
                    qc = " AND ".join("%s = %s::%s" % (k, x, tmap[k]) for k, x in zip(ks, tup))
                    add('p%d%s' % (i, krs), "EXECUTE vo_p(%s);\nEXECUTE vo_p(%s);" % (args, args),
                        "SELECT * FROM (%s) s WHERE %s;\nSELECT * FROM (%s) s WHERE %s;" % (q, qc, q, qc), pre)
        if ordered:
            for orr in ('on', 'off'):
                g = "SET stream_ext.ordered_reads = %s;\n" % orr
                add('o%s' % orr, "SELECT * FROM %s ORDER BY %s LIMIT %d;" % (v['name'], order_cols, lim),
                    "SELECT * FROM (%s) s ORDER BY %s LIMIT %d;" % (q, order_cols, lim), g)
                add('d%s' % orr, "SELECT * FROM %s ORDER BY %s LIMIT %d;" % (v['name'], desc, lim),
                    "SELECT * FROM (%s) s ORDER BY %s LIMIT %d;" % (q, desc, lim), g)
                if len(keys) > 1 and tuples and 'NULL' not in tuples[0][:1]:
                    c0 = "%s = %s::%s" % (keys[0], tuples[0][0], tmap[keys[0]])
                    rest = ", ".join(k + " DESC" for k in keys[1:])
                    add('f%s' % orr, "SELECT * FROM %s WHERE %s ORDER BY %s LIMIT %d;" % (v['name'], c0, rest, lim),
                        "SELECT * FROM (%s) s WHERE %s ORDER BY %s LIMIT %d;" % (q, c0, rest, lim), g)
        script = "\\pset null '<NULL>'\n" + script
        blocks, p = self.run_blocks(script, 'reads of %s' % v['name'])
        colnames = [c for c, _ in types]
        for label in checks:
            vb, qb = blocks.get(label + ':V'), blocks.get(label + ':Q')
            if vb is None or qb is None:
                raise Finding('reads of %s: block %s missing:\n%s\n%s' % (v['name'], label, p.stdout[-2000:], p.stderr[-2000:]))
            if vb[1] != qb[1]:
                raise Finding('read %s of %s: view SQLSTATE %s, query SQLSTATE %s\n%s'
                              % (label, v['name'], vb[1], qb[1], p.stderr[-2000:]))
            vr = [dict(zip(colnames, l.split('\x1f'))) for l in vb[0]]
            qr = [dict(zip(colnames, l.split('\x1f'))) for l in qb[0]]
            if label[0] in 'odf':
                ok = len(vr) == len(qr) and all(
                    all(close(a[c], b[c], c in floatcols) for c in colnames) for a, b in zip(vr, qr))
            else:
                um_v, um_q = rows_match(vr, qr, floatcols)
                ok = not um_v and not um_q
            if not ok:
                raise Finding('read %s of %s differs from the query:\n  view:  %s\n  query: %s\n--- reads script ---\n%s'
                              % (label, v['name'], vb[0][:10], qb[0][:10], script[-6000:]))

    def check_combine(self, v, types):
        """stream_ext.combine() of each aggregate column, over all the view's
        rows and over the rows of one key value, against the aggregate over
        the stream's rows behind them."""
        if v['hop'] or v['having'] or not v['bare']:
            return
        r = self.g.r
        floatcols = {c for c, t in types if t in FLOATY}
        w = v['where'] or 'true'
        key = None
        if v['keycols'] and v['keycols'][0] in v['keyexprs']:
            rc, out, _ = psql("SET TimeZone = %s;\nSELECT quote_nullable(k1::text) FROM %s WHERE k1 IS NOT NULL "
                              "ORDER BY md5(k1::text || '%d') LIMIT 1;" % (lit(v['tz']), v['name'], self.seed),
                              self.schema, check=False)
            if rc == 0 and out.strip():
                key = out.strip()
        tmap = dict(types)
        script = "\\set ON_ERROR_STOP 0\n\\pset null '<NULL>'\nSET TimeZone = %s;\n" % lit(v['tz'])
        labels = []
        for alias, agg in r.sample(v['bare'], min(3, len(v['bare']))):
            labels.append((alias, 'all'))
            script += "\\echo @@%s.all:V\nSELECT stream_ext.combine(%s) FROM %s;\n\\echo @@end :SQLSTATE\n" % (
                alias, alias, v['name'])
            script += "\\echo @@%s.all:Q\nSELECT %s FROM %s WHERE %s;\n\\echo @@end :SQLSTATE\n" % (
                alias, agg, v['frm'], w)
            if key:
                kc = "k1 = %s::%s" % (key, tmap['k1'])
                qc = "(%s) = %s::%s" % (v['keyexprs']['k1'], key, tmap['k1'])
                labels.append((alias, 'key'))
                script += "\\echo @@%s.key:V\nSELECT stream_ext.combine(%s) FROM %s WHERE %s;\n\\echo @@end :SQLSTATE\n" % (
                    alias, alias, v['name'], kc)
                script += "\\echo @@%s.key:Q\nSELECT %s FROM %s WHERE (%s) AND %s;\n\\echo @@end :SQLSTATE\n" % (
                    alias, agg, v['frm'], w, qc)
        blocks, p = self.run_blocks(script, 'combine() of %s' % v['name'])
        for alias, kind in labels:
            vb, qb = blocks.get('%s.%s:V' % (alias, kind)), blocks.get('%s.%s:Q' % (alias, kind))
            if vb is None or qb is None or vb[1] != qb[1]:
                raise Finding('combine(%s) of %s (%s): view %s, query %s\n%s\n--- script ---\n%s'
                              % (alias, v['name'], kind, vb, qb, p.stderr[-2000:], script))
            if vb[1] == '00000' and not (len(vb[0]) == len(qb[0]) == 1
                                         and close(vb[0][0], qb[0][0], alias in floatcols)):
                raise Finding('combine(%s) of %s (%s) differs from the aggregate: %s vs %s\n--- script ---\n%s'
                              % (alias, v['name'], kind, vb[0], qb[0], script))

    def check(self, deep=True):
        for v in self.views:
            types = self.coltypes(v)
            self.check_full(v, types)
            if deep:
                self.check_reads(v, types)
                self.check_combine(v, types)

    # ------------------------------------------------------------ driver
    def run(self):
        r = self.g.r
        self.setup()
        nviews = r.randint(1, 6)
        steps = self.args.steps
        # views are created at random points: some before any row, some
        # over a stream holding rows (backfill)
        create_at = sorted(r.randint(0, steps // 2) for _ in range(nviews))
        vi = 0
        for si in range(steps + 1):
            while vi < nviews and create_at[vi] == si:
                self.add_view(vi)
                vi += 1
                self.check(deep=False)
            if si == steps:
                break
            self.step(si)
            self.check(deep=(si % 3 == 2 or si == steps - 1))
        return True

    def reproducer(self):
        out = ["-- view_oracle seed %d: replay with psql -X -v ON_ERROR_STOP=1 (errors of loads are expected "
               "where the run saw them)" % self.seed,
               "SET client_min_messages = warning;", "CREATE SCHEMA %s;" % self.schema,
               "SET search_path = %s, public;" % self.schema]
        for kind, sql, tag in self.script:
            if kind == 'step':
                out.append("-- %s\n%s" % (tag, sql.strip()))
            else:
                out.append("-- %s: these two ran at the same time in two sessions\n%s\n-- and\n%s"
                           % (tag, sql[0].strip(), sql[1].strip()))
        for v in self.views:
            out.append("-- check %s:\nSET TimeZone = %s;\n(TABLE %s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL TABLE %s);"
                       % (v['name'], lit(v['tz']), v['name'], v['query'], v['query'], v['name']))
        return "\n".join(out)


# ---------------------------------------------------------------- reduction
def replay(schema, script, check_view, check_sql_fn):
    """Run script (a list of steps) in a fresh schema; return the finding text or None."""
    psql("DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s;" % (schema, schema) + SETUP)
    for kind, sql, tag in script:
        if kind == 'step':
            rc, out, err = psql(sql, schema, check=False)
            bad = is_internal(err)
            if bad:
                return bad + ': ' + err.strip()[-500:]
        else:
            for s in sql:
                rc, out, err = psql(s, schema, check=False)
                bad = is_internal(err)
                if bad:
                    return bad + ': ' + err.strip()[-500:]
    return check_sql_fn()


def reduce_run(run, finding_text):
    """Greedy reduction: drop steps (views other than the failing one, loads,
    compactions) while the replay still finds something."""
    schema = run.schema + '_r'
    m = re.search(r'\b(v\d+)\b', finding_text)
    vname = m.group(1) if m else None
    views = {v['name']: v for v in run.views}

    def check_fn(script):
        def f():
            names = [t.split(':', 1)[1] for k, s, t in script if t.startswith('view:')]
            for n in names:
                v = views.get(n)
                if v is None:
                    continue
                types_rc, out, _ = psql("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                                        "WHERE attrelid = '%s.%s'::regclass AND attnum > 0 AND NOT attisdropped "
                                        "ORDER BY attnum;" % (schema, n), check=False)
                types = [tuple(l.split('\x1f')) for l in out.splitlines() if l]
                if not types:
                    continue
                sel = ", ".join("public.vo_f(%s) AS %s" % (c, c) if t in FLOATY else c for c, t in types)
                rc, out, err = psql("SELECT public.vo_cmp(%s, %s, %s, %s);" % (
                    lit(schema + '.' + n), lit(v['query']), lit(sel), lit(v['tz'])), schema, check=False)
                if rc != 0 and is_internal(err):
                    return 'internal: ' + err[-300:]
                vr = [json.loads(l[1:]) for l in out.splitlines() if l and l[0] == 'V']
                qr = [json.loads(l[1:]) for l in out.splitlines() if l and l[0] == 'Q']
                er = [l for l in out.splitlines() if l and l[0] == 'E']
                um_v, um_q = rows_match(vr, qr, {c for c, t in types if t in FLOATY})
                if um_v or um_q or er:
                    return 'mismatch in %s' % n
            return None
        return f

    script = list(run.script)
    if replay(schema, script, vname, check_fn(script)) is None:
        return None, "(the finding did not reproduce in a sequential replay)"
    deadline = time.time() + run.args.reduce_secs
    i = len(script) - 1
    while i >= 1 and time.time() < deadline:
        cand = script[:i] + script[i + 1:]
        if replay(schema, cand, vname, check_fn(cand)) is not None:
            script = cand
        i -= 1
    psql("DROP SCHEMA IF EXISTS %s CASCADE;" % schema, check=False)
    run.script = script
    run.views = [v for v in run.views if any(t == 'view:' + v['name'] for _, _, t in script)]
    return script, None


def parse_seeds(s):
    out = []
    for part in s.split(','):
        if '-' in part:
            a, b = part.split('-')
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seeds', default=os.environ.get('VIEW_ORACLE_SEEDS', '1-10'))
    ap.add_argument('--steps', type=int, default=int(os.environ.get('VIEW_ORACLE_STEPS', '10')))
    ap.add_argument('--max-rows', type=int, default=int(os.environ.get('VIEW_ORACLE_MAX_ROWS', '20000')))
    ap.add_argument('--reduce', action='store_true', default=bool(os.environ.get('VIEW_ORACLE_REDUCE')))
    ap.add_argument('--reduce-secs', type=int, default=300)
    ap.add_argument('--keep', action='store_true', help='keep the schemas of passing seeds')
    ap.add_argument('--verbose', '-v', action='store_true')
    ap.add_argument('--stop', action='store_true', help='stop at the first finding')
    args = ap.parse_args()
    found = 0
    t0 = time.time()
    shapes = 0
    refused = 0
    for seed in parse_seeds(args.seeds):
        run = Run(seed, args)
        ts = time.time()
        try:
            run.run()
            shapes += len(run.views)
            for v in run.views:
                cover(v)
            refused += len(run.g.__dict__.get('refused', []))
            print('ok      seed %d: %d views, %d steps, %d refused (%.1f s)' % (
                seed, len(run.views), len(run.script), len(run.g.__dict__.get('refused', [])), time.time() - ts),
                flush=True)
            if not args.keep:
                psql("DROP SCHEMA IF EXISTS %s CASCADE;" % run.schema, check=False)
        except Finding as f:
            found += 1
            text = str(f)
            print('FINDING seed %d: %s' % (seed, text), flush=True)
            for l in run.log:
                print('   ', l)
            if args.reduce:
                script, why = reduce_run(run, text)
                if why:
                    print('   ', why)
            print('---- reproducer (seed %d) ----\n%s\n---- end of reproducer ----' % (seed, run.reproducer()),
                  flush=True)
            if args.stop:
                break
        finally:
            for f in glob.glob(os.path.join(COPY_DIR, 'vo_%s_*.csv' % run.schema)):
                try:
                    os.unlink(f)
                except OSError:
                    pass
    print('views checked, by feature: ' + ', '.join('%s %d' % kv for kv in sorted(COVERAGE.items())))
    for (st, msg), q in sorted(REFUSALS.items()):
        print('refused %s %s\n    e.g. %s' % (st, msg, q))
    print('view_oracle: %d seeds, %d views checked, %d shapes refused cleanly, %d findings (%.0f s)'
          % (len(parse_seeds(args.seeds)), shapes, refused, found, time.time() - t0))
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
