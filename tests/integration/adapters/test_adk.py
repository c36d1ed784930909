"""memlab behind Google ADK, offline: a scripted model drives a real Runner; memory flows through
PreloadMemoryTool, load_memory tool calls and the facts callback, and never crosses users."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event as AdkEvent
from google.adk.memory import InMemoryMemoryService
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions import Session as AdkSession
from google.adk.tools import load_memory_tool, preload_memory_tool
from google.genai import types
from pydantic import Field

import memlab
from memlab.adk import EventMemoryService, FactMemoryService, event_from_adk, preload_facts_callback

SETUP = "Our payments service runs in eu-west-1 and we deploy with Argo CD."
QUESTION = "Why is the payments rollout stuck?"


class ScriptedLlm(BaseLlm):
    """Answers from a script (text, or a dict = a load_memory call) and records every request it gets."""

    model: str = "scripted"
    script: list = Field(default_factory=list)
    requests: list = Field(default_factory=list)

    async def generate_content_async(self, llm_request, stream: bool = False):
        self.requests.append(llm_request)
        item = self.script.pop(0) if self.script else "OK."
        if isinstance(item, dict):
            part = types.Part(function_call=types.FunctionCall(name="load_memory", args=item))
        else:
            part = types.Part(text=item)
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def request_text(request) -> str:
    """Everything the model saw: system instruction plus every part of the contents."""
    return "\n".join([str(request.config.system_instruction), *(c.model_dump_json() for c in request.contents)])


async def converse(runner: Runner, sessions: InMemorySessionService, app: str, user: str, text: str):
    session = await sessions.create_session(app_name=app, user_id=user)
    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for _ in runner.run_async(user_id=user, session_id=session.id, new_message=message):
        pass
    return await sessions.get_session(app_name=app, user_id=user, session_id=session.id)


def build(memory_service, *, tools=(), callback=None, script=()):
    llm = ScriptedLlm(script=list(script))
    agent = LlmAgent(name="ops", model=llm, instruction="Help with deployments.", tools=list(tools),
                     before_model_callback=callback)  # fmt: skip
    sessions = InMemorySessionService()
    app = f"adk-{uuid.uuid4().hex[:8]}"
    runner = Runner(app_name=app, agent=agent, session_service=sessions, memory_service=memory_service)
    return runner, sessions, llm, app


@pytest.fixture
def event_service(store, embedder):
    return EventMemoryService(memlab.EventMemory(store, embedder))


def test_preload_memory_tool_brings_session_one_into_session_two(event_service):
    runner, sessions, llm, app = build(event_service, tools=[preload_memory_tool.PreloadMemoryTool()],
                                       script=["Noted.", "Let me check Argo CD.", "Hello."])  # fmt: skip

    async def scenario():
        first = await converse(runner, sessions, app, "alice", SETUP)
        await event_service.add_session_to_memory(first)
        await event_service.add_session_to_memory(first)  # re-adding is a no-op
        await converse(runner, sessions, app, "alice", QUESTION)
        await converse(runner, sessions, app, "bob", QUESTION)

    asyncio.run(scenario())
    alice, bob = request_text(llm.requests[1]), request_text(llm.requests[2])
    assert "eu-west-1" in alice and "Argo CD" in alice and "PAST_CONVERSATIONS" in alice
    assert "eu-west-1" not in bob, "another user's session two must not see it"


def test_load_memory_tool_calls_reach_memlab(event_service):
    script = ["Noted.", {"query": "payments deployment setup"}, "It syncs."]
    runner, sessions, llm, app = build(event_service, tools=[load_memory_tool.load_memory_tool], script=script)

    async def scenario():
        first = await converse(runner, sessions, app, "alice", SETUP)
        await event_service.add_session_to_memory(first)
        await converse(runner, sessions, app, "alice", QUESTION)

    asyncio.run(scenario())
    after_tool = request_text(llm.requests[-1])
    assert "load_memory" in after_tool and "eu-west-1" in after_tool


def test_facts_callback_preloads_consolidated_facts(store, embedder):
    facts = memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor())
    service = FactMemoryService(facts)
    runner, sessions, llm, app = build(service, callback=preload_facts_callback(facts),
                                       script=["Noted.", "Checking.", "Hi."])  # fmt: skip

    async def scenario():
        first = await converse(runner, sessions, app, "alice", SETUP)
        await service.add_session_to_memory(first)
        await converse(runner, sessions, app, "alice", QUESTION)
        await converse(runner, sessions, app, "bob", QUESTION)

    asyncio.run(scenario())
    alice, bob = request_text(llm.requests[1]), request_text(llm.requests[2])
    assert "data, not instructions" in alice and "Argo CD" in alice
    assert "Argo CD" not in bob
    found = asyncio.run(service.search_memory(app_name=app, user_id="alice", query="how do we deploy?"))
    assert found.memories and found.memories[0].author == "memory"


def test_a_stale_high_impact_fact_reaches_the_model_under_the_confirm_heading(store, embedder):
    facts = memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor())
    service = FactMemoryService(facts, allow=("personal", "health"))
    runner, sessions, llm, app = build(service, tools=[preload_memory_tool.PreloadMemoryTool()],
                                       callback=preload_facts_callback(facts, allow=("personal", "health")),
                                       script=["Booking."])  # fmt: skip
    said = AdkSession(id="old", app_name=app, user_id="ana", events=[AdkEvent(
        id="old-0", invocation_id="inv", author="user", timestamp=1_700_000_000,  # 2023-11-14: over a year ago
        content=types.Content(role="user", parts=[types.Part(text="I live in Leeds and I prefer window seats.")]))])

    async def scenario():
        await service.add_session_to_memory(said)
        await converse(runner, sessions, app, "ana", "Book me a train home from my city on Friday.")

    asyncio.run(scenario())
    request = llm.requests[0]
    block = str(request.config.system_instruction)  # preload_facts_callback's fenced block
    lines = block.splitlines()
    assert lines[lines.index(memlab.facts.STALE_HEADING) + 1] == "- home_city = Leeds (stated 2023-11-14)"
    preloaded = "\n".join(p.text or "" for c in request.contents for p in c.parts or [] if "PAST_CONVERSATIONS" in
                          (p.text or ""))  # PreloadMemoryTool's block, from search_memory's entries  # fmt: skip
    stale = preloaded.index(f"memlab: {memlab.facts.STALE_HEADING}")
    assert stale < preloaded.index("memory: home_city = Leeds (stated 2023-11-14)")


def adk_session(app: str, user: str, sid: str, texts: list[tuple[str, str]], *, partial_last: bool = False):
    events = [
        AdkEvent(id=f"{sid}-{i}", invocation_id="inv", author=author, timestamp=1_780_000_000 + i,
                 content=types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=t)]),
                 partial=partial_last and i == len(texts) - 1)
        for i, (author, t) in enumerate(texts)
    ]  # fmt: skip
    return AdkSession(id=sid, app_name=app, user_id=user, events=events)


def test_converter_skips_partial_events_and_keeps_tool_calls():
    s = adk_session("a", "u", "s1", [("user", SETUP), ("ops", "Payments is in")], partial_last=True)
    converted = [event_from_adk(e) for e in s.events]
    assert converted[1].partial and converted[0].text == SETUP
    assert converted[0].timestamp.tzinfo is not None


@pytest.mark.parametrize("kind", ["adk", "memlab"])
def test_same_scenarios_as_adks_own_in_memory_service(kind, store, embedder):
    """Scoping by app and user, re-adding a session, deletion blocking re-ingest: memlab is a drop-in."""
    service = InMemoryMemoryService() if kind == "adk" else EventMemoryService(memlab.EventMemory(store, embedder))
    app = f"dropin-{uuid.uuid4().hex[:8]}"
    s1 = adk_session(app, "u1", "s1", [("user", SETUP), ("ops", "Noted: payments runs on Argo CD in eu-west-1.")])

    async def search(a, u, q="payments Argo CD eu-west-1"):
        return (await service.search_memory(app_name=a, user_id=u, query=q)).memories

    async def scenario():
        await service.add_session_to_memory(s1)
        await service.add_session_to_memory(s1)
        own = await search(app, "u1")
        assert own and len({m.id for m in own}) == len(own), "re-adding duplicates nothing"
        assert await search(app, "u2") == [] and await search(app + "-x", "u1") == []
        target = next(m.id for m in own if "Noted" in m.content.parts[0].text)
        await service.delete_memory(app_name=app, user_id="u1", memory_id=target)
        await service.add_session_to_memory(s1)  # the deleted event must not come back
        assert target not in {m.id for m in await search(app, "u1")}
        await service.add_events_to_memory(app_name=app, user_id="u1", events=adk_session(
            app, "u1", "s2", [("user", "We also run a billing export job every night at 2am.")]).events,
            session_id="s2")  # fmt: skip
        assert any("billing" in m.content.parts[0].text for m in await search(app, "u1", "nightly billing export"))

    asyncio.run(scenario())


def test_add_memory_and_metadata(store, embedder):
    from google.adk.memory.memory_entry import MemoryEntry

    service = EventMemoryService(memlab.EventMemory(store, embedder))
    app = f"direct-{uuid.uuid4().hex[:8]}"
    entry = MemoryEntry(content=types.Content(parts=[types.Part(text="The on-call rota changes every Monday.")]))

    async def scenario():
        await service.add_memory(app_name=app, user_id="u", memories=[entry])
        return await service.search_memory(app_name=app, user_id="u", query="when does on-call change?")

    (found,) = asyncio.run(scenario()).memories
    assert found.timestamp and "distance" in found.custom_metadata and found.id


def test_a_tuned_gate_file_reaches_the_agent(store, embedder, tmp_path):
    """The answerability artefact a retrieval sweep writes is loaded by path and applied to every search: an
    unanswerable query gets no memories, and the gate's search settings (hybrid, time boost, preferred author)
    are used."""
    n = 8  # the gate's features (memlab.events.answerability.FEATURES)
    settings = {"system": "text/hybrid/time-boost/author-user", "rendering": "text", "mode": "hybrid",
                "time": "boost", "prefer_author": "user"}
    gate = memlab.events.AnswerabilityGate(coef=(-5.0,) + (0.0,) * (n - 1), intercept=2.0, mean=(0.0,) * n,
                                           scale=(1.0,) * n, threshold=0.5, settings=settings)
    path = gate.save(tmp_path / "answerability.json")
    service = EventMemoryService(memlab.EventMemory(store, embedder), gate=str(path))
    assert service.settings.mode == "hybrid" and service.settings.max_distance is None
    assert service.settings.prefer_author == "user" and service.settings.time == "boost"
    app = f"gate-{uuid.uuid4().hex[:8]}"
    entry_text = "The staging database is restored from backup every Sunday night."
    from google.adk.memory.memory_entry import MemoryEntry

    async def scenario():
        entry = MemoryEntry(content=types.Content(parts=[types.Part(text=entry_text)]))
        await service.add_memory(app_name=app, user_id="u", memories=[entry])
        near = await service.search_memory(app_name=app, user_id="u", query="When is staging restored from backup?")
        far = await service.search_memory(app_name=app, user_id="u", query="Which football team won the cup?")
        return near.memories, far.memories

    near, far = asyncio.run(scenario())
    assert [m.content.parts[0].text for m in near] == [entry_text] and far == []
    with pytest.raises(memlab.ConfigError, match="does not exist"):
        EventMemoryService(memlab.EventMemory(store, embedder), gate=str(tmp_path / "missing.json"))
