"""Reads for baselines and migrations, and every delete of the memory-unit table: tombstoned deletes,
erasure of a user or session, retention, vacuum. Every statement is scoped by app and user (or by model and
layer for whole-layer housekeeping)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

import numpy as np
import psycopg
from psycopg import sql

from memlab.storage.schema import ANY_SESSION, UNITS_TABLE, ModelInfo
from memlab.storage.unit_table import READABLE_TIME, drop_index, tenant_index_name
from memlab.storage.units import _BODY_KEY, Deleted, SessionKey, _unnest_keys

# -- reads for baselines and housekeeping ---------------------------------------------------------------


def scoped_vectors(
    conn: psycopg.Connection, model: ModelInfo, layer: str, app_name: str | None = None, user_id: str | None = None
) -> list[tuple[str, str, str, str, list[str], np.ndarray, str]]:
    """(app, user, unit_id, body, event_ids, vector, session_id) of every unit of a model and layer, optionally
    one scope (a unit is (session, unit id): an event unit's id is its event id, unique within its session only)."""
    where = [sql.SQL("embed_model = %s"), sql.SQL("layer = %s")]
    params: list = [model.model_id, layer]
    if app_name is not None:
        where.append(sql.SQL("app_name = %s"))
        params.append(app_name)
    if user_id is not None:
        where.append(sql.SQL("user_id = %s"))
        params.append(user_id)
    query = sql.SQL(
        "SELECT app_name, user_id, unit_id, body, event_ids, embedding::{vt}, session_id FROM {} WHERE {} "
        "ORDER BY app_name, user_id, unit_id, session_id"
    ).format(sql.Identifier(UNITS_TABLE), sql.SQL(" AND ").join(where), vt=model.vector_type())
    return [(*r[:5], _as_array(r[5]), r[6]) for r in conn.execute(query, params).fetchall()]


def _as_array(value) -> np.ndarray:
    """pgvector hands back `Vector` objects or arrays depending on the wire format; unify to float32."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


def units_to_migrate(
    conn: psycopg.Connection,
    old_model_id: str,
    new_model_id: str,
    app_name: str | None = None,
    layers: Sequence[str] | None = None,
) -> list[tuple]:
    """(app, user, session, layer, unit_id, event_ids, author, occurred_at, body, rendered) of every unit stored under
    the old model that has no row under the new one yet, optionally one app and some layers."""
    layer_list = list(layers) if layers is not None else None
    return conn.execute(
        sql.SQL(
            "SELECT o.app_name, o.user_id, o.session_id, o.layer, o.unit_id, o.event_ids, o.author, "
            "o.occurred_at, o.body, o.rendered FROM {t} o WHERE o.embed_model = %s AND NOT EXISTS (SELECT 1 FROM {t} n "
            "WHERE n.app_name = o.app_name AND n.user_id = o.user_id AND n.layer = o.layer "
            "AND n.session_id = o.session_id AND n.unit_id = o.unit_id AND n.embed_model = %s) "
            "AND (%s::text IS NULL OR o.app_name = %s) AND (%s::text[] IS NULL OR o.layer = ANY(%s)) "
            "ORDER BY o.app_name, o.user_id, o.unit_id, o.session_id"
        ).format(t=sql.Identifier(UNITS_TABLE)),
        [old_model_id, new_model_id, app_name, app_name, layer_list, layer_list],
    ).fetchall()


def delete_memory(
    conn: psycopg.Connection, app_name: str, user_id: str, memory_id: str, session_id: str | None = None
) -> Deleted:
    """Delete one memory: the unit with that id and every unit holding that event, in every layer and model
    (only in `session_id` when given, else in every session of the user), and leave a tombstone for each
    (session, event id) involved so a later re-ingest does not bring them back. A memory found nowhere is
    tombstoned in advance: in `session_id`, or in every session."""
    rows = conn.execute(
        sql.SQL(
            "DELETE FROM {} WHERE app_name = %s AND user_id = %s AND (unit_id = %s OR %s = ANY(event_ids)) "
            "AND (%s::text IS NULL OR session_id = %s) RETURNING session_id, event_ids, embed_model, " + _BODY_KEY
        ).format(sql.Identifier(UNITS_TABLE)),
        [app_name, user_id, memory_id, memory_id, session_id, session_id],
    ).fetchall()
    if rows:
        events = {(s, e) for s, ids, *_ in rows for e in ids if e == memory_id or len(ids) == 1}
    else:
        events = {(ANY_SESSION if session_id is None else session_id, memory_id)}
    stones = 0
    for session, event_id in sorted(events):
        stones += conn.execute(
            "INSERT INTO memory_tombstone (app_name, user_id, session_id, event_id) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            [app_name, user_id, session, event_id],
        ).rowcount
    return Deleted(units=len(rows), tombstones=stones, text_keys={(m, k) for _, _, m, k, _ in rows},
                   body_keys={r[-1] for r in rows})




def tombstoned_of(
    conn: psycopg.Connection, wanted: Mapping[SessionKey, Iterable[str]]
) -> set[tuple[str, str, str, str]]:
    """(app, user, session, event id) of the events deleted on purpose, in their session or in every session of
    the user, for many sessions (of any users); each matched on its own app and user. Users with no tombstone at
    all (most, and every user of a first import) are found first and their ids never sent: a first load's
    thousands of ids per batch cost more to send than the answer that none is deleted."""
    users = sorted({(app, user) for app, user, _ in wanted})
    marked = set(map(tuple, conn.execute(
        "SELECT k.app_name, k.user_id FROM unnest(%s::text[], %s::text[]) AS k(app_name, user_id) "
        "WHERE EXISTS (SELECT 1 FROM memory_tombstone t WHERE t.app_name = k.app_name AND t.user_id = k.user_id)",
        [[a for a, _ in users], [u for _, u in users]],
    ).fetchall())) if users else set()  # fmt: skip
    columns = _unnest_keys({key: ids for key, ids in wanted.items() if key[:2] in marked})
    if not columns[0]:
        return set()
    rows = conn.execute(
        "SELECT k.app_name, k.user_id, k.session_id, k.event_id "
        "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) AS k(app_name, user_id, session_id, event_id) "
        "CROSS JOIN LATERAL (SELECT 1 FROM memory_tombstone t WHERE t.app_name = k.app_name AND t.user_id = k.user_id "
        "AND t.event_id = k.event_id AND t.session_id IN (k.session_id, %s) LIMIT 1) t",
        [*columns, ANY_SESSION],
    ).fetchall()
    return {tuple(r) for r in rows}


def _drop_tenant_indexes(conn: psycopg.Connection, app_name: str, user_id: str, pairs: set[tuple[str, str]]) -> int:
    """Drop the per-tenant indexes of a user for these (model, layer) pairs (their definitions name the user)."""
    names = [tenant_index_name(model, layer, app_name, user_id) for model, layer in sorted(pairs)]
    found = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ANY(%s)", [names]
    ).fetchall()
    for (name,) in found:
        drop_index(conn, name)
    return len(found)


def erase_user(conn: psycopg.Connection, app_name: str, user_id: str) -> Deleted:
    """Every unit of the user (all layers, all models), the user's tombstones (nothing is left to guard) and
    the user's per-tenant indexes."""
    stones = conn.execute(
        "DELETE FROM memory_tombstone WHERE app_name = %s AND user_id = %s", [app_name, user_id]
    ).rowcount
    rows = conn.execute(
        sql.SQL(
            "DELETE FROM {} WHERE app_name = %s AND user_id = %s RETURNING layer, embed_model, " + _BODY_KEY
        ).format(sql.Identifier(UNITS_TABLE)),
        [app_name, user_id],
    ).fetchall()
    pairs = {(m, layer) for layer, m, *_ in rows}
    pairs |= set(conn.execute("SELECT model_id, layer FROM memlab_vector_index").fetchall())
    dropped = _drop_tenant_indexes(conn, app_name, user_id, pairs)
    return Deleted(units=len(rows), tombstones=stones, tenant_indexes=dropped,
                   text_keys={(m, k) for _, m, k, _ in rows}, body_keys={r[-1] for r in rows})


def erase_session(
    conn: psycopg.Connection, app_name: str, user_id: str, session_id: str, model_id: str | None = None
) -> Deleted:
    """Every unit of one session (all layers; one model when given), and the session's own tombstones once no
    unit of the session is left in any model (while one is, they still guard its re-ingest)."""
    rows = conn.execute(
        sql.SQL(
            "DELETE FROM {} WHERE app_name = %s AND user_id = %s AND session_id = %s "
            "AND (%s::text IS NULL OR embed_model = %s) RETURNING embed_model, " + _BODY_KEY
        ).format(sql.Identifier(UNITS_TABLE)),
        [app_name, user_id, session_id, model_id, model_id],
    ).fetchall()
    left = conn.execute(
        sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE app_name = %s AND user_id = %s AND session_id = %s)").format(
            sql.Identifier(UNITS_TABLE)
        ),
        [app_name, user_id, session_id],
    ).fetchone()[0]
    stones = 0
    if not left:
        stones = conn.execute(
            "DELETE FROM memory_tombstone WHERE app_name = %s AND user_id = %s AND session_id = %s",
            [app_name, user_id, session_id],
        ).rowcount
    return Deleted(units=len(rows), tombstones=stones, text_keys={(m, k) for m, k, _ in rows},
                   body_keys={r[-1] for r in rows})


ERASURE_TABLES = (UNITS_TABLE, "memory_tombstone")


def vacuum(conn: psycopg.Connection, *, full: bool = False) -> tuple[str, ...]:
    """VACUUM (and ANALYZE, so no statistic still samples a deleted value) the unit and tombstone tables after
    an erasure; `full` rewrites them (ACCESS EXCLUSIVE lock) so no deleted byte stays in their files. Needs an
    autocommit connection (VACUUM cannot run inside a transaction). Returns the tables vacuumed."""
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE or not conn.autocommit:
        raise ValueError("VACUUM must run on an autocommit connection outside a transaction")
    options = sql.SQL("FULL, ANALYZE" if full else "ANALYZE")
    conn.execute(sql.SQL("VACUUM ({}) {}").format(options, sql.SQL(", ").join(map(sql.Identifier, ERASURE_TABLES))))
    return ERASURE_TABLES


def delete_before(
    conn: psycopg.Connection, cutoff: datetime, app_name: str | None = None, user_id: str | None = None
) -> int:
    """Retention: delete units that occurred before `cutoff`, optionally only for one app or user."""
    return erase_before(conn, cutoff, app_name, user_id).units


def erase_before(
    conn: psycopg.Connection, cutoff: datetime, app_name: str | None = None, user_id: str | None = None
) -> Deleted:
    """`delete_before`, with the (model, text hash) of every deleted body."""
    where = [sql.SQL("occurred_at < %s")]
    params: list = [cutoff]
    if app_name is not None:
        where.append(sql.SQL("app_name = %s"))
        params.append(app_name)
    if user_id is not None:
        where.append(sql.SQL("user_id = %s"))
        params.append(user_id)
    rows = conn.execute(
        sql.SQL("DELETE FROM {} WHERE {} RETURNING embed_model, " + _BODY_KEY).format(
            sql.Identifier(UNITS_TABLE), sql.SQL(" AND ").join(where)
        ),
        params,
    ).fetchall()
    return Deleted(units=len(rows), text_keys={(m, k) for m, k, _ in rows}, body_keys={r[-1] for r in rows})


def delete_layer(conn: psycopg.Connection, app_name: str, layer: str) -> int:
    """Every unit of one app in one layer: all users, all models (e.g. a benchmark corpus before a reload)."""
    return conn.execute(
        sql.SQL("DELETE FROM {} WHERE app_name = %s AND layer = %s").format(sql.Identifier(UNITS_TABLE)),
        [app_name, layer],
    ).rowcount


def delete_model(conn: psycopg.Connection, model_id: str) -> int:
    """Every unit stored with a model, in every app, user and layer (the end of a migration)."""
    return conn.execute(
        sql.SQL("DELETE FROM {} WHERE embed_model = %s").format(sql.Identifier(UNITS_TABLE)), [model_id]
    ).rowcount



def user_rows(conn: psycopg.Connection, app_name: str, user_id: str) -> list[tuple[str, str | None, list[str]]]:
    """(body, rendered, event ids) of every unit of one user in every layer and model: what the reliability
    probes search byte by byte for what must not have been stored."""
    query = sql.SQL("SELECT body, rendered, event_ids FROM {} WHERE app_name = %s AND user_id = %s").format(
        sql.Identifier(UNITS_TABLE)
    )
    return [(r[0], r[1], list(r[2])) for r in conn.execute(query, [app_name, user_id]).fetchall()]



def stored_units(conn: psycopg.Connection, app_name: str, user_id: str, layer: str) -> list[tuple]:
    """(session, unit id, event ids, author, occurred_at, body) of every unit of one user in one layer, once each
    (a unit stored under two models during a migration comes back once), in session and time order: what
    reading a user's sessions back from memory needs (memlab.events.stored_sessions)."""
    query = sql.SQL(
        "SELECT DISTINCT ON (session_id, occurred_at, unit_id) session_id, unit_id, event_ids, author, "
        f"{READABLE_TIME}, body FROM {{}} WHERE app_name = %s AND user_id = %s AND layer = %s "
        "ORDER BY session_id, occurred_at, unit_id, embed_model"
    ).format(sql.Identifier(UNITS_TABLE))
    return conn.execute(query, [app_name, user_id, layer]).fetchall()


def stored_layers(conn: psycopg.Connection, app_name: str, user_id: str) -> list[str]:
    """The layers one user has units in (to name them when the layer asked for holds nothing)."""
    query = sql.SQL("SELECT DISTINCT layer FROM {} WHERE app_name = %s AND user_id = %s ORDER BY layer").format(
        sql.Identifier(UNITS_TABLE)
    )
    return [r[0] for r in conn.execute(query, [app_name, user_id]).fetchall()]
