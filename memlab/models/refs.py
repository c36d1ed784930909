"""What a cached model reply was derived from, so erasure can find it without reading replies.

A reply to a request that held stored memory (a transcript sent to the fact extractor, hits sent to a reader or a
re-ranker) quotes a user's words: it is a copy of user data like the embedding cache. Each cache entry keeps the
*refs* of its sources, never the texts: `text_key` (the embedding cache's sha256) of every stored text sent, and
scope refs (hashes of app + user, app + user + session, app + user + event id) for callers that know whose data
it is. Erasure hands the refs of what it deleted to `memlab.models.cache.forget_model_replies`.

Callers pass refs explicitly (`ChatRequest.refs`, `complete(refs=)`, `rerank(refs=)`); a caller that hands the
work to code it does not own (FactMemory calling any extractor) wraps the call in `deriving_from(refs)` and every
model call made inside it, in this thread, adds them. An embedding computed inside it registers them too (with
its texts' `text_key`s), so an erasure of any of them while it runs cancels the caching of its vectors
(memlab.embedding.vector_cache)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from memlab.safety.clean_texts import text_key

_AMBIENT: ContextVar[tuple[str, ...]] = ContextVar("memlab_model_refs", default=())


def _scope_key(*parts: str) -> str:
    return text_key(json.dumps(["memlab-scope", *parts], ensure_ascii=False))


def user_ref(app_name: str, user_id: str) -> str:
    """The ref every reply derived from this user's data carries (erased by either memory's forget_user)."""
    return _scope_key("user", app_name, user_id)


def session_ref(app_name: str, user_id: str, session_id: str) -> str:
    """The ref of replies derived from one session (erased by forget_session)."""
    return _scope_key("session", app_name, user_id, session_id)


def event_ref(app_name: str, user_id: str, event_id: str) -> str:
    """The ref of replies derived from one event, whatever its session (delete_memory, forget_events,
    delete_fact of a value read from it)."""
    return _scope_key("event", app_name, user_id, event_id)


def text_refs(texts: Iterable[str | None]) -> list[str]:
    """`text_key` of each text as given and stripped (memories store a turn's text stripped; a prompt may not)."""
    out: dict[str, None] = {}
    for text in texts:
        if text:
            out[text_key(text)] = None
            out[text_key(text.strip())] = None
    return list(out)


def scope_refs(app_name: str, user_id: str, session_id: str | None = None,
               event_ids: Iterable[str] = ()) -> list[str]:  # fmt: skip
    """The user's ref, the session's (when given) and each event's."""
    refs = [user_ref(app_name, user_id)]
    if session_id is not None:
        refs.append(session_ref(app_name, user_id, session_id))
    refs.extend(event_ref(app_name, user_id, e) for e in event_ids)
    return list(dict.fromkeys(refs))


@contextmanager
def deriving_from(refs: Iterable[str]) -> Iterator[None]:
    """Every model reply cached inside this block (this thread) also records `refs`, and every embedding computed
    inside it is registered against them while it runs."""
    token = _AMBIENT.set(tuple(dict.fromkeys([*_AMBIENT.get(), *refs])))
    try:
        yield
    finally:
        _AMBIENT.reset(token)


def with_ambient(refs: Iterable[str] = ()) -> tuple[str, ...]:
    """`refs` plus those of the enclosing `deriving_from` blocks, each once, in order."""
    return tuple(dict.fromkeys([*_AMBIENT.get(), *refs]))
