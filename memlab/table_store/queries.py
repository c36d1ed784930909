"""The statements memlab runs on a user's table, each scoped in SQL by app and user (and model, when asked):
every value is a placeholder, every name an identifier or literal composed by psycopg.sql from a bound layout."""

from __future__ import annotations

import numpy as np
from psycopg import sql

from memlab.errors import DimensionError
from memlab.table_store.catalog import DISTANCES, Bound, VectorIndex


def scope(bound: Bound, *, model: bool, user: bool = True) -> sql.Composable:
    """`user = %(user)s AND app = %(app)s [AND model = %(model)s]` through the layout (an app the table does not
    have is no condition: the table is one app; apps named in another table match through it)."""
    parts = []
    if user:
        parts.append(sql.SQL("{} = %(user)s").format(bound.expr("user")))
    if bound.app_match is not None:
        parts.append(bound.app_match)
    if model:
        parts.append(sql.SQL("{} = %(model)s").format(bound.expr("model")))
    return sql.SQL(" AND ").join(parts) if parts else sql.SQL("true")


def same_dimension(bound: Bound) -> sql.Composable:
    """` AND vector_dims(embedding) = %(dim)s` for a column without a declared dimension (rows of another size
    cannot be compared with the query), else nothing."""
    if bound.catalog.declared_dimension is not None:
        return sql.SQL("")
    return sql.SQL(" AND vector_dims({}) = %(dim)s").format(bound.expr("embedding"))


def row_columns(bound: Bound) -> sql.Composable:
    """event_id, text, session, author, time of a row (ids and texts as text)."""
    return sql.SQL(", ").join([bound.as_text("event_id"), bound.as_text("text"), bound.as_text("session"),
                               bound.as_text("author"), bound.expr("time")])  # fmt: skip


def users_sql(bound: Bound, *, model: bool) -> sql.Composed:
    return sql.SQL("SELECT {u}, count(*) FROM {t} WHERE {w} GROUP BY 1 ORDER BY 2 DESC, 1").format(
        u=bound.as_text("user"), t=bound.table, w=scope(bound, model=model, user=False))


def count_sql(bound: Bound, *, model: bool) -> sql.Composed:
    return sql.SQL("SELECT count(*) FROM {t} WHERE {w}").format(t=bound.table, w=scope(bound, model=model))


def vector_type(bound: Bound, index: VectorIndex | None) -> sql.Composable:
    """The type the query vector is cast to: the index's cast, else the column's own type and dimension."""
    if index is not None and index.cast is not None:
        kind, dim = index.cast.split("(")
        return sql.SQL("{}({})").format(sql.SQL({"vector": "vector", "halfvec": "halfvec"}[kind]),
                                        sql.SQL(str(int(dim.rstrip(")")))))  # fmt: skip
    kind = sql.SQL({"vector": "vector", "halfvec": "halfvec"}[bound.catalog.embedding_type])
    dim = bound.catalog.dimension
    return kind if dim is None else sql.SQL("{}({})").format(kind, sql.SQL(str(int(dim))))


def distance_expr(bound: Bound, distance: str, index: VectorIndex | None) -> sql.Composable:
    """`embedding <op> %(q)s::type`, with the embedding cast as the index casts it (so that index can serve it)."""
    column = bound.expr("embedding")
    vt = vector_type(bound, index)
    if index is not None and index.cast is not None:
        column = sql.SQL("({})::{}").format(column, vt)
    return sql.SQL("({} {} %(q)s::{})").format(column, sql.SQL(DISTANCES[distance]), vt)


def search_sql(bound: Bound, distance: str, strategy: str, index: VectorIndex | None, *, model: bool) -> sql.Composed:
    """The scoped k-NN query. `exact` orders by `distance + 0`, which no index serves, so every row of the scope is
    scored; `index` orders by the indexed expression. The MATERIALIZED CTE keeps the inner ORDER BY ... LIMIT as
    written, the outer one re-sorts what a relaxed iterative scan returned slightly out of order."""
    dist = distance_expr(bound, distance, index)
    order = sql.SQL("{} + 0").format(dist) if strategy == "exact" else dist
    return sql.SQL(
        "WITH ranked AS MATERIALIZED (SELECT {cols}, {dist} AS distance FROM {t}"
        " WHERE {w} AND {e} IS NOT NULL{dims} ORDER BY {order} LIMIT %(k)s)"
        " SELECT * FROM ranked ORDER BY distance + 0"
    ).format(cols=row_columns(bound), dist=dist, t=bound.table, w=scope(bound, model=model), e=bound.expr("embedding"),
             dims=same_dimension(bound), order=order)  # fmt: skip


def vectors_sql(bound: Bound, *, model: bool) -> sql.Composed:
    return sql.SQL("SELECT {id}, {e} FROM {t} WHERE {w} AND {e} IS NOT NULL{dims} ORDER BY 1").format(
        id=bound.as_text("event_id"), e=bound.expr("embedding"), t=bound.table, w=scope(bound, model=model),
        dims=same_dimension(bound))


def texts_sql(bound: Bound, *, model: bool, limit: bool) -> sql.Composed:
    return sql.SQL("SELECT {cols} FROM {t} WHERE {w} ORDER BY {time} NULLS LAST, 1{lim}").format(
        cols=row_columns(bound), t=bound.table, w=scope(bound, model=model), time=bound.expr("time"),
        lim=sql.SQL(" LIMIT %(limit)s") if limit else sql.SQL(""))  # fmt: skip


def models_sql(bound: Bound, *, user: bool) -> sql.Composed:
    return sql.SQL("SELECT {m}, count(*) FROM {t} WHERE {w} GROUP BY 1 ORDER BY 2 DESC").format(
        m=bound.as_text("model"), t=bound.table, w=scope(bound, model=False, user=user))


def sample_sql(bound: Bound, *, user: bool, model: bool) -> sql.Composed:
    """Rows with a text and a vector, in event-id order (stable), for the model check."""
    return sql.SQL("SELECT {id}, {text}, {e} FROM {t} WHERE {w} AND {e} IS NOT NULL{dims} AND {text} IS NOT NULL"
                   " AND {text} <> '' ORDER BY 1 LIMIT %(limit)s").format(
        id=bound.as_text("event_id"), text=bound.as_text("text"), e=bound.expr("embedding"), t=bound.table,
        w=scope(bound, model=model, user=user), dims=same_dimension(bound))  # fmt: skip


def vector_param(vector: np.ndarray, dimension: int | None) -> np.ndarray:
    """A query vector as the float32 array the connection binds in pgvector's binary form (its adapters, registered
    on every pooled connection): exact, with nothing to format here or parse in the server. DimensionError for a
    wrong size, ValueError for NaN or infinite values."""
    values = np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(-1))
    if dimension is not None and values.size != dimension:
        raise DimensionError(f"the query vector has {values.size} dimensions and the table's embeddings {dimension}: "
                             "embed the query with the model that wrote the table (check_model tells which fits).")
    if not np.isfinite(values).all():
        raise ValueError("a query vector with NaN or infinite values cannot be searched")
    return values


def plan_uses_index(plan: dict, index_names: set[str]) -> tuple[bool, str]:
    """(whether any node of a JSON plan scans one of `index_names`, the first access path found)."""
    found: list[str] = []

    def walk(node: dict) -> None:
        name = node.get("Index Name")
        if name is not None:
            found.append(name)
        elif node.get("Node Type") in ("Seq Scan", "Parallel Seq Scan", "Bitmap Heap Scan"):
            found.append(node["Node Type"].lower().replace(" ", "_"))
        for child in node.get("Plans", []):
            walk(child)

    walk(plan)
    used = any(f in index_names for f in found)
    return used, next((f for f in found if f in index_names), found[0] if found else "unknown")
