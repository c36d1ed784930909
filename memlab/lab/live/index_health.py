"""Index health of a live store, read-only: per user-size bucket which strategy `auto` picks and what PostgreSQL's
plan really uses (exact scan, the shared HNSW index, a user's partial index), each HNSW index's size against the
table, and rows stored under another model id than the configured embedder's (a half-done migration).

Everything comes from the catalog, memlab's kept counts and `EXPLAIN` without ANALYZE (the plan only: no search
runs), on a connection that is read-only by default (`default_transaction_read_only`), so a role that may only
SELECT can run it. The strategy is decided by the search's own function (`resolve_auto`) from facts read here
without the search's side effects (the search folds a user's count rows; this never writes). One user per bucket
is explained: the bucket's largest, nearest the next strategy. User ids never leave this module: the tables and
the markdown hold apps, buckets and counts only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import psycopg
from pgvector.psycopg import register_vector

from memlab.config import configured_dsn, db_timeout
from memlab.errors import ConfigError, DatabaseUnavailableError
from memlab.events.search import resolve_auto
from memlab.inputs import check_text
from memlab.lab.metrics.scoring import SIZE_LABELS, size_bucket
from memlab.lab.report.probe_section import health_lines
from memlab.safety.redact import dsn_secrets, redact
from memlab.storage import units as sqlu
from memlab.storage.policy import SETTINGS_TABLE, load_policy
from memlab.storage.read_only import connect_read_only
from memlab.storage.schema import ModelInfo
from memlab.storage.store import _first_line
from memlab.types import AutoPolicy, SearchSettings

MODELS_TABLE = "memlab_embedding_model"
REGISTRY_TABLE = "memlab_vector_index"
NEEDED_TABLES = (sqlu.COUNTS_TABLE, MODELS_TABLE)  # and the unit table (sqlu.missing_tables)
TENANT_PREFIX = "memlab_tenant_"
EXPLAIN_KIND = "EXPLAIN (FORMAT JSON) without ANALYZE: the planner's choice; no search ran"

# What a plan's access path (`sqlu.plan_access_path`) means, and what each strategy should use.
PLAN_USES = {"hnsw": "HNSW index", "scope_index": "exact scan", "primary_key": "exact scan", "seq_scan": "exact scan"}
EXPECTED = {"exact": "exact scan", "hnsw": "HNSW index", "tenant-index": "partial index"}

BUCKET_COLUMNS = ["app", "bucket", "users", "rows", "per_user_indexes", "auto_picks", "sample_units", "strategy",
                  "plan_uses", "as_expected"]  # fmt: skip
INDEX_COLUMNS = ["index", "kind", "model_id", "layer", "indexes", "rows", "index_bytes", "table_bytes", "ratio",
                 "scans", "valid"]  # fmt: skip
MODEL_COLUMNS = ["model_id", "dimension", "rows", "layer_rows", "differs_from_configured"]


@dataclass
class IndexHealth:
    """What `index_health` found: `buckets` (per app and size bucket), `indexes` (HNSW indexes against the table),
    `models` (rows per model id) and `warnings` (one line each: the problem and its fix)."""

    buckets: pd.DataFrame
    indexes: pd.DataFrame
    models: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    layer: str = ""
    model_id: str = ""
    policy: AutoPolicy = field(default_factory=AutoPolicy)
    explain: str = EXPLAIN_KIND


def index_health(
    dsn: str | None, *, layer: str, model_id: str, apps: Sequence[str] | None = None, home: str | Path | None = None
) -> IndexHealth:
    """The index health of the store at `dsn` (None: what `open_store()` opens) for one layer and the configured
    embedder's `model_id`, over `apps` (None: every app). Read-only (see the module docstring). Raises ConfigError
    when the database holds no memlab tables or the role may not read them."""
    for what, value in (("the layer", layer), ("the model id", model_id), *(("an app id", a) for a in apps or ())):
        check_text(value, what)
    conn, shown = connect_read_only(dsn, home, db_timeout(None), doing="check index health of", autocommit=True)
    try:
        with conn:
            return _health(conn, shown, layer, model_id, list(apps) if apps is not None else None)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise ConfigError(f"the role used for {shown} may not read memlab's tables ({_first_line(exc)}); fix: "
                          "GRANT SELECT ON ALL TABLES IN SCHEMA public TO that role") from None  # fmt: skip
    except psycopg.Error as exc:
        raise DatabaseUnavailableError(redact(f"checking index health of {shown} failed: {_first_line(exc)}",
                                              known=dsn_secrets(configured_dsn(dsn)))) from None  # fmt: skip


def _health(conn: psycopg.Connection, shown: str, layer: str, model_id: str, apps: list[str] | None) -> IndexHealth:
    missing = sqlu.missing_tables(conn, NEEDED_TABLES)
    if missing:
        raise ConfigError(f"{shown} holds no memlab tables ({', '.join(missing)} missing); give the DSN of the "
                          "database the agent's EventMemory writes to")  # fmt: skip
    register_vector(conn)  # reads the vector type's oid: query vectors bind as memlab's searches bind them
    policy = _policy(conn)
    models = _models(conn, layer, model_id, apps)
    warnings = _model_warnings(models, model_id, layer)
    configured = models[models.model_id == model_id]
    dimension = int(configured.dimension.iloc[0]) if len(configured) else None
    users = _users(conn, layer, model_id, apps)
    tenants = _tenant_indexes(conn, users)
    table_rows = sqlu.planned_rows(conn)
    users["tenant_index"] = users.index_name.isin(tenants)
    users["strategy"] = [_strategy(policy, int(u), bool(t), table_rows)[0]
                         for u, t in zip(users.units, users.tenant_index, strict=True)]  # fmt: skip
    buckets = _buckets(conn, users, policy, table_rows, layer, ModelInfo(model_id, dimension or 1))
    indexes = _indexes(conn, layer, model_id, tenants, users)
    warnings += _index_warnings(buckets, indexes, users, policy, layer, model_id)
    return IndexHealth(buckets=buckets, indexes=indexes, models=models, warnings=warnings, layer=layer,
                       model_id=model_id, policy=policy)  # fmt: skip


def _policy(conn: psycopg.Connection) -> AutoPolicy:
    """The policy `auto` uses on this store: the calibrated one it keeps, else the defaults."""
    if conn.execute("SELECT to_regclass(%s)", [SETTINGS_TABLE]).fetchone()[0] is None:
        return AutoPolicy()
    return load_policy(conn) or AutoPolicy()


def _apps_clause(apps: list[str] | None) -> tuple[str, list]:
    return ("", []) if apps is None else (" AND app_name = ANY(%s)", [apps])


def _models(conn: psycopg.Connection, layer: str, model_id: str, apps: list[str] | None) -> pd.DataFrame:
    """Rows per registered model id (all layers, and this layer), from the kept counts."""
    clause, params = _apps_clause(apps)
    rows = conn.execute(
        f"SELECT m.model_id, m.dimension, coalesce(c.rows, 0), coalesce(c.layer_rows, 0) FROM {MODELS_TABLE} m "
        "LEFT JOIN (SELECT embed_model, sum(delta) AS rows, coalesce(sum(delta) FILTER (WHERE layer = %s), 0) "
        f"AS layer_rows FROM {sqlu.COUNTS_TABLE} WHERE true{clause} GROUP BY embed_model) c "
        "ON c.embed_model = m.model_id ORDER BY m.created_at, m.model_id",
        [layer, *params],
    ).fetchall()
    frame = pd.DataFrame(rows, columns=MODEL_COLUMNS[:4]).astype({"rows": "int64", "layer_rows": "int64"})
    frame["differs_from_configured"] = frame.model_id != model_id
    return frame[MODEL_COLUMNS]


def _model_warnings(models: pd.DataFrame, model_id: str, layer: str) -> list[str]:
    """A half-done migration: rows under a model id other than the configured one (named with their counts)."""
    others = models[models.differs_from_configured & (models.rows > 0)]
    mine = models[~models.differs_from_configured]
    have = int(mine.rows.iloc[0]) if len(mine) else 0
    out = []
    if not have:
        out.append(f"the configured model {model_id!r} has no rows here (layer {layer!r} or any other): check the "
                   "probe's embedder against the one the agent writes with")  # fmt: skip
    for row in others.itertuples():
        out.append(
            f"half-done embedding migration: {row.rows} rows under model {row.model_id!r} ({row.layer_rows} in layer "
            f"{layer!r}) beside {have} under the configured {model_id!r}. Fix: finish it with "
            f"memlab.events.migrate_embeddings(store, {row.model_id!r}, <the {model_id!r} embedder>) (resumable: rows "
            f"already migrated are skipped), then store.drop_model({row.model_id!r}) once every reader uses "
            f"{model_id!r}; if {row.model_id!r} is the new model, the probe's embedder is the stale one"
        )
    return out


def _users(conn: psycopg.Connection, layer: str, model_id: str, apps: list[str] | None) -> pd.DataFrame:
    """(app, user, units, bucket, their partial index's name) of every user of the layer and model with units, from
    the kept counts (what `auto` reads), scoped by layer, model and the apps asked for."""
    clause, params = _apps_clause(apps)
    rows = conn.execute(
        f"SELECT app_name, user_id, sum(delta) FROM {sqlu.COUNTS_TABLE} WHERE layer = %s AND embed_model = %s"
        f"{clause} GROUP BY app_name, user_id HAVING sum(delta) > 0 ORDER BY app_name, user_id",
        [layer, model_id, *params],
    ).fetchall()
    frame = pd.DataFrame(rows, columns=["app", "user", "units"]).astype({"units": "int64"})
    frame["bucket"] = [size_bucket(n) for n in frame.units]
    frame["index_name"] = [sqlu.tenant_index_name(model_id, layer, a, u) for a, u in zip(frame.app, frame.user,
                                                                                          strict=True)]  # fmt: skip
    return frame


def _tenant_indexes(conn: psycopg.Connection, users: pd.DataFrame) -> set[str]:
    """Names of the users' partial indexes that exist (the catalog, by the names memlab gives them)."""
    names = list(users.index_name)
    rows = conn.execute("SELECT relname FROM pg_class WHERE relkind = 'i' AND relname = ANY(%s)", [names]).fetchall()
    return {r[0] for r in rows}


def _strategy(policy: AutoPolicy, units: int, tenant_index: bool, table_rows: int) -> tuple[str, SearchSettings, bool]:
    """The strategy `auto` picks for a user of `units` (as the search names it), its settings and literal flag."""
    facts = sqlu.ScopeFacts(units=units, tenant_index=tenant_index, table_rows=table_rows)
    settings, literal = resolve_auto(SearchSettings(), policy, facts)
    return ("tenant-index" if literal else settings.strategy), settings, literal


def _plan_uses(path: str) -> str:
    if path.startswith(f"index:{TENANT_PREFIX}"):
        return "partial index"
    return PLAN_USES.get(path, path)


def _explain(conn: psycopg.Connection, scope: sqlu.Scope, settings: SearchSettings, literal: bool) -> str:
    """What the plan of the search memlab would run for this user uses (EXPLAIN without ANALYZE, in a read-only
    transaction whose SET LOCAL settings end with it)."""
    vector = np.full(scope.model.dimension, 1 / np.sqrt(scope.model.dimension), dtype=np.float32)
    with conn.transaction():
        sqlu.apply_settings(conn, settings)
        _, path, _ = sqlu.explain_search(conn, scope, vector, settings, analyze=False, literal=literal)
    return _plan_uses(path)


def _buckets(conn: psycopg.Connection, users: pd.DataFrame, policy: AutoPolicy, table_rows: int, layer: str,
             model: ModelInfo) -> pd.DataFrame:  # fmt: skip
    """One row per app and size bucket: its users, rows and partial indexes, the strategies `auto` picks for them,
    and the plan of its largest user's search."""
    out = []
    for (app, bucket), group in users.groupby(["app", "bucket"], sort=False):
        sample = group.sort_values(["units", "user"], ascending=[False, True]).iloc[0]
        strategy, settings, literal = _strategy(policy, int(sample.units), bool(sample.tenant_index), table_rows)
        uses = _explain(conn, sqlu.Scope(app, str(sample.user), layer, model), settings, literal)
        picks = Counter(group.strategy)
        out.append({"app": app, "bucket": bucket, "users": len(group), "rows": int(group.units.sum()),
                    "per_user_indexes": int(group.tenant_index.sum()),
                    "auto_picks": ", ".join(f"{s} {n}" for s, n in picks.most_common()),
                    "sample_units": int(sample.units), "strategy": strategy, "plan_uses": uses,
                    "as_expected": EXPECTED[strategy] == uses})  # fmt: skip
    frame = pd.DataFrame(out, columns=BUCKET_COLUMNS)
    order = {label: i for i, label in enumerate(SIZE_LABELS)}
    return frame.sort_values(["app", "bucket"], key=lambda c: c.map(order) if c.name == "bucket" else c,
                             ignore_index=True)  # fmt: skip


def _indexes(conn: psycopg.Connection, layer: str, model_id: str, tenants: set[str], users: pd.DataFrame
             ) -> pd.DataFrame:  # fmt: skip
    """Each shared HNSW index (one per model and layer, from memlab's registry) and the users' partial indexes
    taken together, against the table's size (heap and TOAST, without indexes) and the rows each covers."""
    registry = {name: (m, lay) for m, lay, name in conn.execute(
        f"SELECT model_id, layer, index_name FROM {REGISTRY_TABLE}").fetchall()}  # fmt: skip
    counts = {(m, lay): int(n) for m, lay, n in conn.execute(
        f"SELECT embed_model, layer, sum(delta) FROM {sqlu.COUNTS_TABLE} GROUP BY embed_model, layer").fetchall()}
    table_bytes = sqlu.table_bytes(conn)
    tenant_rows = int(users[users.index_name.isin(tenants)].units.sum())
    out, per_user, other = [], [0, 0, 0, True], [0, 0, 0, True]
    for name, size, valid, scans in sqlu.hnsw_indexes(conn):
        if name in registry:
            m, lay = registry[name]
            out.append({"index": name, "kind": "shared", "model_id": m, "layer": lay, "indexes": 1,
                        "rows": counts.get((m, lay), 0), "index_bytes": int(size), "scans": int(scans),
                        "valid": bool(valid)})  # fmt: skip
            continue
        into = per_user if name in tenants else other
        into[0], into[1], into[2], into[3] = into[0] + 1, into[1] + int(size), into[2] + int(scans), into[3] and valid
    if per_user[0]:
        out.append({"index": f"{TENANT_PREFIX}*", "kind": "per-user", "model_id": model_id, "layer": layer,
                    "indexes": per_user[0], "rows": tenant_rows, "index_bytes": per_user[1], "scans": per_user[2],
                    "valid": per_user[3]})  # fmt: skip
    if other[0]:  # partial indexes of other apps, layers or models than this check's, or not memlab's
        out.append({"index": "(other)", "kind": "other", "model_id": None, "layer": None, "indexes": other[0],
                    "rows": None, "index_bytes": other[1], "scans": other[2], "valid": other[3]})  # fmt: skip
    frame = pd.DataFrame(out, columns=INDEX_COLUMNS)
    frame["table_bytes"] = table_bytes
    frame["ratio"] = frame.index_bytes / table_bytes if table_bytes else float("nan")
    return frame


def _index_warnings(buckets: pd.DataFrame, indexes: pd.DataFrame, users: pd.DataFrame, policy: AutoPolicy,
                    layer: str, model_id: str) -> list[str]:  # fmt: skip
    """Plans that do not use what `auto` picked, a missing or invalid index, large users without their own index."""
    out = []
    shared = indexes[(indexes.kind == "shared") & (indexes.model_id == model_id) & (indexes.layer == layer)]
    if shared.empty and (users.strategy == "hnsw").any():
        out.append(f"no HNSW index for model {model_id!r}, layer {layer!r}, yet `auto` sends "
                   f"{int((users.strategy == 'hnsw').sum())} users to it. Fix: store.ensure_vector_index("
                   f"{model_id!r}, {layer!r}) (an EventMemory opened with that embedder builds it)")  # fmt: skip
    for row in indexes[~indexes.valid.astype(bool)].itertuples():
        out.append(f"index {row.index} ({row.kind}) is invalid (a failed build): searches cannot use it. Fix: drop "
                   "it and build it again")  # fmt: skip
    for row in buckets[~buckets.as_expected.astype(bool)].itertuples():
        out.append(f"app {row.app!r}, users of {row.bucket} units: `auto` picks {row.strategy} but the plan uses "
                   f"{row.plan_uses} ({EXPECTED[row.strategy]} expected); check the index above and run "
                   "store.analyze() for fresh planner statistics")  # fmt: skip
    large = users[(users.units >= policy.tenant_index_above) & ~users.tenant_index]
    for app, group in large.groupby("app"):
        out.append(f"app {app!r}: {len(group)} users hold at least {policy.tenant_index_above} units (the policy's "
                   "tenant_index_above) but no partial index of their own. Fix: EventMemory.maintain("
                   f"app_name={app!r}) builds them")  # fmt: skip
    return out


def health_meta(health: IndexHealth) -> dict:
    """What the section says beside its tables (saved in the probe's manifest, so the report renders it later)."""
    p = health.policy
    return {"layer": health.layer, "model_id": health.model_id, "explain": health.explain,
            "warnings": list(health.warnings), "policy": {"calibrated_on": p.calibrated_on,
                                                          "exact_below": p.exact_below,
                                                          "tenant_index_above": p.tenant_index_above}}  # fmt: skip


def health_markdown(health: IndexHealth) -> str:
    """A "## Index health" section for the probe's report.md: warnings first, then the three tables."""
    return "\n".join(health_lines(health_meta(health), health.buckets, health.indexes, health.models))


__all__ = ["IndexHealth", "health_markdown", "health_meta", "index_health"]
