"""Every write path is held to the erasure contract and the ingest filter: an `add_sessions` call of many batches
loses, whole, to a `forget_user` that commits while it runs (first-load and normal paths), `bulk_load` refuses
what ingest refuses (a credential, a deleted memory, a user forgotten while it ran), a direct fact write refuses
a credential, and the query log refuses a password typed as the reply to a question about it."""

from __future__ import annotations

from datetime import timedelta

import pytest

import memlab
from memlab.events.units import Unit
from memlab.lab.reliability.probes import GatedEmbedder, race
from memlab.lab.reliability.probes.erasure_writes import GatedRows
from tests.conftest import T0, make_session

ERASED_DURING_INGEST = "erased_during_ingest"
BATCH = 8  # batch_units: the sessions below make several batches
TOPICS = ["garden shed", "piano lessons", "tax return", "flight to Lisbon", "dentist visit", "book club"]


def _sessions(app: str, user: str, n: int = 10, turns: int = 4, first: int = 0) -> list[memlab.Session]:
    return [make_session(app, user, f"s{s}", [f"Note {s}.{i}: the {TOPICS[(s + i) % len(TOPICS)]} moved to week {i}"
                                              for i in range(turns)], start=T0 + timedelta(days=s))
            for s in range(first, first + n)]  # fmt: skip


def _unit_count(store: memlab.Store, app: str, user: str) -> int:
    with store.connection() as conn:
        return conn.execute("SELECT count(*) FROM memory_unit WHERE app_name = %s AND user_id = %s",
                            [app, user]).fetchone()[0]  # fmt: skip


@pytest.mark.parametrize(("path", "given"), [("first-load", "list"), ("normal", "list"), ("first-load", "iterator")])
def test_forget_user_during_a_multi_batch_add_sessions_wins_over_every_batch(store, embedder, app_name, path, given):
    gated = GatedEmbedder(embedder)
    mem = memlab.EventMemory(store, gated, layer=f"race-{app_name}")  # a new layer: the path is the user's alone
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
    assert report.path == {"normal": "batched", "first-load": "copy-first-load"}[path], report.path_reason
    assert _unit_count(store, app_name, "u") == 0, "units of the forgotten user stored after forget_user returned"
    assert report.skipped[ERASED_DURING_INGEST] == 40, report
    assert _unit_count(store, app_name, "v") == 8, "another user's units of the same call are written"
    # an add that starts after the erasure stores the user again
    assert mem.add_sessions(_sessions(app_name, "u", 2), batch_units=BATCH).added == 8


CREDENTIAL = "use this key AKIAIOSFODNN7EXAMPLE for the bucket"
QUESTION = "What is the wifi password at the cabin?"
REPLY = "Tr0ub4dor&3Cabin"  # alone no credential; the reply to QUESTION is one (ingest refuses it)


def _unit(sid: str, eid: str, text: str, minute: int) -> Unit:
    return Unit(sid, eid, (eid,), "user", T0 + timedelta(minutes=minute), text)


def _rows(embedder, app: str, user: str, units: list[Unit]) -> list[tuple]:
    vectors = embedder.embed_documents([u.embed_text for u in units])
    return [(app, user, u, v) for u, v in zip(units, vectors, strict=True)]


def _bodies(store: memlab.Store, app: str, user: str) -> list[str]:
    with store.connection() as conn:
        return [r[0] for r in conn.execute("SELECT body FROM memory_unit WHERE app_name = %s AND user_id = %s "
                                           "ORDER BY occurred_at", [app, user]).fetchall()]  # fmt: skip


def test_bulk_load_refuses_the_credentials_ingest_refuses(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    texts = ["I moved the piano lessons to Thursday evenings.", CREDENTIAL, QUESTION, REPLY,
             "The garden shed needs a new roof this spring."]  # fmt: skip
    ingested = mem.add_session(make_session(app_name, "ingest", "s1", texts))
    assert ingested.skipped["secret"] == 2  # what ingest refuses, bulk_load must refuse too
    units = [_unit("s1", f"s1-e{i}", text, i) for i, text in enumerate(texts)]
    added = mem.bulk_load(_rows(embedder, app_name, "bulk", units))
    assert _bodies(store, app_name, "bulk") == _bodies(store, app_name, "ingest") == [texts[0], texts[2], texts[4]]
    assert added == 3


def test_bulk_load_brings_no_deleted_memory_back(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    texts = ["I adopted a grey cat called Pixel last spring.", "My sister Ines lives in Lisbon."]
    mem.add_session(make_session(app_name, "u", "s1", texts))
    assert mem.delete_memory(app_name, "u", "s1-e0") == 1
    units = [_unit("s1", "s1-e0", texts[0], 0), _unit("s1", "s1-e1", texts[1], 1),
             # a unit under another id that holds the deleted event (an imported chunk)
             Unit("s1", "chunk-0", ("s1-e0", "s1-e1"), "user", T0, f"{texts[0]}\n{texts[1]}")]  # fmt: skip
    assert mem.bulk_load(_rows(embedder, app_name, "u", units)) == 0
    assert _bodies(store, app_name, "u") == [texts[1]]


def test_forget_user_during_bulk_load_wins_over_the_rest_of_the_load(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    units = [_unit(f"s{i // 4}", f"s{i // 4}-e{i % 4}", f"Imported note {i} about the {TOPICS[i % len(TOPICS)]}", i)
             for i in range(16)]  # fmt: skip
    rows = GatedRows(_rows(embedder, app_name, "u", units), before=4)
    forgotten, added = race(rows, lambda: mem.bulk_load(rows, batch_rows=2), lambda: mem.forget_user(app_name, "u"))
    assert forgotten == 4 and added == 4, "the batches before the erasure were written, then erased"
    assert _unit_count(store, app_name, "u") == 0, "rows of the forgotten user loaded after forget_user returned"
    assert mem.bulk_load(_rows(embedder, app_name, "u", units[:2])) == 2, "a load after the erasure stores again"


def test_a_direct_fact_write_refuses_a_credential(store, embedder, app_name):
    facts = memlab.FactMemory(store, embedder)
    report = facts.add_domain_fact(app_name, "team:payments", "deploy_tool", "Argo CD", quote=CREDENTIAL, at=T0)
    assert report.skipped["secret"] == 1 and report.inserted == 0
    report = facts.add_domain_fact(app_name, "team:payments", "deploy_tool", "ghp_1234567890abcdefghijABCDEFGHIJ123456",
                                   at=T0)  # fmt: skip
    assert report.skipped["secret"] == 1 and report.inserted == 0
    assert facts.rows(app_name, memlab.facts.DOMAIN_USER) == []
    assert facts.add_domain_fact(app_name, "team:payments", "deploy_tool", "Argo CD", at=T0).inserted == 1


@pytest.mark.parametrize("kind", ["events", "facts"])
def test_the_query_log_refuses_a_password_typed_as_the_reply_to_a_question(store, embedder, app_name, kind):
    log = memlab.QueryLog(enabled=True)
    mem = memlab.EventMemory(store, embedder, query_log=log) if kind == "events" else \
        memlab.FactMemory(store, embedder, query_log=log)  # fmt: skip
    # the reply follows the question in the log (the user's previous query is the turn before it)
    mem.search(app_name, "u", QUESTION)
    mem.search(app_name, "u", REPLY)
    assert [q.text for q in memlab.events.logged_queries(store, app_name, "u")] == [QUESTION]
    # or follows the agent's question, given as the search's context
    mem.search(app_name, "v", REPLY, context=["Sure, I can check the router.", QUESTION])
    assert memlab.events.logged_queries(store, app_name, "v") == []
    assert mem.query_log.counts["secret"] == 2
    # one word after another question is an ordinary query, and is recorded
    mem.search(app_name, "w", "Which city does my sister live in?")
    mem.search(app_name, "w", "Lisbon")
    mem.search(app_name, "x", "Lisbon", context=[QUESTION])  # too plain to be a password
    logged = memlab.events.logged_queries(store, app_name, "w")
    assert [q.text for q in logged] == ["Which city does my sister live in?", "Lisbon"]
    assert [q.text for q in memlab.events.logged_queries(store, app_name, "x")] == ["Lisbon"]
    with pytest.raises(memlab.InputError, match="context"):
        mem.search(app_name, "u", "Where do I live?", context=QUESTION)


def test_the_adk_facts_callback_judges_a_reply_with_the_agents_question(store, embedder):
    import asyncio

    from google.genai import types

    from memlab.adk import FactMemoryService, preload_facts_callback
    from tests.integration.adapters.test_adk import build

    facts = memlab.FactMemory(store, embedder, query_log=memlab.QueryLog(enabled=True))
    runner, sessions, _, app = build(FactMemoryService(facts), callback=preload_facts_callback(facts),
                                     script=[QUESTION, "Thanks, you are connected."])  # fmt: skip
    asked = "Can you connect my laptop to the cabin network?"

    async def scenario():
        session = await sessions.create_session(app_name=app, user_id="alice")
        for text in (asked, REPLY):
            message = types.Content(role="user", parts=[types.Part(text=text)])
            async for _ in runner.run_async(user_id="alice", session_id=session.id, new_message=message):
                pass

    asyncio.run(scenario())
    assert [q.text for q in memlab.events.logged_queries(store, app, "alice")] == [asked]
