"""Event memory's erasure: one memory, a session, a user, or everything before a date. Each deletes the rows in one
transaction that first marks the erasure (write_guard: an add in flight then writes nothing erased), then drops
the cached vectors of the deleted texts and, when asked, runs the disk erasure level (memlab.storage.disk_erasure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from memlab.embedding.cache import forget_transient
from memlab.errors import ConfigError
from memlab.events.core import MemoryCore
from memlab.events.write_guard import erasing
from memlab.inputs import MAX_ID_BYTES, check_ids, check_text
from memlab.models import event_ref, forget_model_replies, session_ref, user_ref
from memlab.safety.clean_texts import forget_scans
from memlab.storage import disk_erasure, erasures
from memlab.storage import query_log as sql_log
from memlab.storage import unit_housekeeping as housekeeping
from memlab.storage import units as sqlu
from memlab.types import DeletionReport


def forget_in_process(refs: Iterable[str]) -> int:
    """After an erasure committed, what this process still holds of the erased data goes: cached model replies
    derived from `refs` (calls in flight cancelled), transient vectors, and the memo of texts scanned clean (its
    digests cost only a scan again). Every erasure of either memory calls this one function, so none skips a part.
    Returns the model replies dropped."""
    replies = forget_model_replies(refs)
    forget_transient()
    forget_scans()
    return replies


class Forgetting:
    """The erasure paths of one EventMemory (see the module docstring)."""

    def __init__(self, core: MemoryCore) -> None:
        self.core = core

    def _finish_erasure(self, deleted: sqlu.Deleted, vacuum: bool | str, queries: int = 0,
                        scope: Sequence[str] = ()) -> DeletionReport:  # fmt: skip
        """After the delete committed: drop the cached vectors of the deleted texts and the cached model replies
        derived from them or from the erased `scope` (memlab.models.refs), and cancel the embeddings and model
        calls in flight deriving from either, then VACUUM if asked."""
        self.core.changed()
        refs = [*deleted.model_refs(), *scope]
        cache_entries = self.core.forget_erased(deleted.text_keys, refs)
        model_replies = forget_in_process(refs)
        vacuumed: tuple[str, ...] = ()
        if vacuum:
            vacuumed = disk_erasure.after_erasure(self.core.store, vacuum)  # every table holding users' rows
            for cache in self.core.caches():
                cache.vacuum()
        return DeletionReport(
            units=deleted.units,
            tombstones=deleted.tombstones,
            cache_entries=cache_entries,
            tenant_indexes=deleted.tenant_indexes,
            vacuumed=vacuumed,
            queries=queries,
            model_replies=model_replies,
        )

    def delete_memory(
        self, app_name: str, user_id: str, memory_id: str, *, session_id: str | None = None, vacuum: bool | str = False
    ) -> int:
        """See `EventMemory.delete_memory`."""
        check_ids(app_name, user_id, memory_id=memory_id, optional={"session_id": session_id})
        disk_erasure.check_level(vacuum)
        with self.core.store.transaction() as conn:
            erasing(conn, app_name, user_id)  # its tombstones stop adds in flight (write_guard.recheck)
            deleted = housekeeping.delete_memory(conn, app_name, user_id, memory_id, session_id)
        return self._finish_erasure(deleted, vacuum, scope=[event_ref(app_name, user_id, memory_id)]).units

    def forget_session(
        self, app_name: str, user_id: str, session_id: str, *, vacuum: bool | str = False
    ) -> DeletionReport:
        """See `EventMemory.forget_session`."""
        check_ids(app_name, user_id, session_id=session_id)
        disk_erasure.check_level(vacuum)
        with self.core.store.transaction() as conn:
            marker = erasures.units_session(app_name, user_id, session_id, self.core.model.model_id)
            # an add of the session in flight writes nothing of it, nor a search in flight its query
            erasing(conn, app_name, user_id, [marker, sql_log.marker_session(app_name, user_id, session_id)])
            deleted = housekeeping.erase_session(conn, app_name, user_id, session_id, self.core.model.model_id)
            queries = sql_log.delete_sessions(conn, app_name, user_id, [session_id])  # queries whose hits it held
        return self._finish_erasure(deleted, vacuum, queries, [session_ref(app_name, user_id, session_id)])

    def forget_user(self, app_name: str, user_id: str, *, vacuum: bool | str = False) -> int:
        """See `EventMemory.forget_user`."""
        self.core.scope(app_name, user_id)
        disk_erasure.check_level(vacuum)
        with self.core.store.transaction() as conn:
            erasing(conn, app_name, user_id, [erasures.units_user(app_name, user_id),
                                              sql_log.marker_user(app_name, user_id)])  # fmt: skip
            deleted = housekeeping.erase_user(conn, app_name, user_id)
            queries = sql_log.delete_user(conn, app_name, user_id)  # the user's logged queries, every memory's
        return self._finish_erasure(deleted, vacuum, queries, [user_ref(app_name, user_id)]).units

    def purge_before(
        self, cutoff: datetime, *, app_name: str | None = None, user_id: str | None = None, vacuum: bool | str = False
    ) -> int:
        """See `EventMemory.purge_before`."""
        if not isinstance(cutoff, datetime) or cutoff.tzinfo is None:
            raise ConfigError("purge_before needs a timezone-aware cutoff datetime.")
        for name, value in (("app", app_name), ("user", user_id)):
            if value is not None:
                check_text(value, f"the {name} id", max_bytes=MAX_ID_BYTES, app_name=app_name, user_id=user_id)
        disk_erasure.check_level(vacuum)
        with self.core.store.transaction() as conn:
            deleted = housekeeping.erase_before(conn, cutoff, app_name, user_id)
        return self._finish_erasure(deleted, vacuum).units
