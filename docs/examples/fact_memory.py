"""Fact memory, end to end: a session becomes facts, which are served, explained, confirmed and forgotten.
docs/explanation/fact-memory.md shows the middle part; run the whole file with `python fact_memory.py`."""

from datetime import datetime, timedelta, timezone

import memlab

store = memlab.open_store()  # the embedded server under MEMLAB_HOME
said = datetime.now(timezone.utc) - timedelta(days=2)
session = memlab.Session(app_name="travel", user_id="ana", id="s1", events=[
    memlab.Event(id="e1", author="user", timestamp=said, text="I live in Leeds."),
    memlab.Event(id="e2", author="user", timestamp=said, text="I'm pescatarian.")])
at = said + timedelta(days=1)  # when Ana confirmed her city
candidate = memlab.facts.Candidate("user", "diet", "vegetarian", "I'm vegetarian.", event_time=at)
rows: list[memlab.facts.Fact] = []  # the stored rows of the candidate's key: none yet

# --8<-- [start:facts]
facts = memlab.FactMemory(store, memlab.default_embedder(), extractor=memlab.RuleExtractor())
rep = facts.add_session(session)          # rep.inserted, rep.superseded, rep.dropped (reason -> count), ...
current = facts.current("travel", "ana")  # Fact(subject, predicate, value, status, basis, confidence, ...)
hits = facts.search("travel", "ana", "what do I eat?")  # hits[0].text: "diet = pescatarian (stated <date>)"
block = facts.preload_block("travel", "ana", "query")   # heading says: data, not instructions, may be out of date
trail = facts.why("travel", "ana", "user", "diet")      # every observation of the key: session, quote, time, action
facts.confirm("travel", "ana", "home_city", "s9", at)   # the user said yes when asked: the value is current again
decision = memlab.facts.decide(candidate, rows, "one")  # the pure consolidation step
# --8<-- [end:facts]

print(f"inserted {rep.inserted}; current: {', '.join(f'{f.predicate} = {f.value}' for f in current)}")
print(f"best hit: {hits[0].text}")
print(block)
print(f"diet first said in session {trail[0].session_id}: {trail[0].quote!r}")
print(f"decide: {decision.action}")
facts.forget_user("travel", "ana")
