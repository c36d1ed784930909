"""Every write path is held to the erasure contract and the ingest filter: an `add_sessions` call of many batches
loses, whole, to a `forget_user` that commits while it runs (first-load and normal paths), `bulk_load` refuses
what ingest refuses (a credential, a deleted memory, a user forgotten while it ran), a direct fact write refuses
a credential, and the query log refuses a password typed as the reply to a question about it."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

import memlab
from memlab.lab.probes import GatedEmbedder, race
from tests.conftest import T0, make_session

ERASED_DURING_INGEST = "erased_during_ingest"
BATCH = 8  # batch_units: the sessions below make several batches
TOPICS = ["garden shed", "piano lessons", "tax return", "flight to Lisbon", "dentist visit", "book club"]


def _sessions(app: str, user: str, n: int = 10, turns: int = 4, first: int = 0) -> list[memlab.Session]:
    return [make_session(app, user, f"s{s}", [f"Note {s}.{i}: the {TOPICS[(s + i) % len(TOPICS)]} moved to week {i}"
                                              for i in range(turns)], start=T0 + timedelta(days=s))
            for s in range(first, first + n)]  # fmt: skip


def _units(store: memlab.Store, app: str, user: str) -> int:
    with store.connection() as conn:
        return conn.execute("SELECT count(*) FROM memory_unit WHERE app_name = %s AND user_id = %s",
                            [app, user]).fetchone()[0]  # fmt: skip


@pytest.mark.parametrize(("path", "given"), [("first-load", "list"), ("normal", "list"), ("first-load", "iterator")])
def test_forget_user_during_a_multi_batch_add_sessions_wins_over_every_batch(store, embedder, app_name, path, given):
    gated = GatedEmbedder(embedder)
    mem = memlab.EventMemory(store, gated)
    if path == "normal":  # the user holds units already: not a first load
        gated.gate.set()
        mem.add_session(_sessions(app_name, "u", 1, first=99)[0])
        gated.entered.clear()
        gated.gate.clear()
    sessions = [*_sessions(app_name, "u"), *_sessions(app_name, "v", 2)]
    # an iterator's users are not known when the call starts: its generation is ordered against every erasure
    _, report = race(gated, lambda: mem.add_sessions(sessions if given == "list" else iter(sessions),
                                                     batch_units=BATCH),
                     lambda: mem.forget_user(app_name, "u"))  # fmt: skip
    assert (report.path == "pipelined") == (path == "normal"), report.path_reason
    assert _units(store, app_name, "u") == 0, "units of the forgotten user stored after forget_user returned"
    assert report.skipped[ERASED_DURING_INGEST] == 40, report
    assert _units(store, app_name, "v") == 8, "another user's units of the same call are written"
    # an add that starts after the erasure stores the user again
    assert mem.add_sessions(_sessions(app_name, "u", 2), batch_units=BATCH).added == 8
