"""Event memory beyond the basics: what is embedded and how it is searched (docs/explanation/retrieval.md),
recording the queries it serves (docs/howto/label-queries.md), and erasing a user down to the database's files
(docs/howto/erasure.md). Run the whole file with `python event_memory.py`."""

from datetime import datetime, timedelta, timezone
from pathlib import Path

import memlab

store, embedder = memlab.open_store(), memlab.default_embedder()  # the embedded server under MEMLAB_HOME
may = datetime(datetime.now(timezone.utc).year - 1, 5, 20, 9, 0, tzinfo=timezone.utc)
session = memlab.Session(app_name="deploy-bot", user_id="dan", id="s1", events=[
    memlab.Event(id="e1", author="user", timestamp=may, text="We moved the payments service to eu-west-1."),
    memlab.Event(id="e2", author="model", timestamp=may + timedelta(minutes=1), text="Noted: payments in eu-west-1."),
    memlab.Event(id="e3", author="user", timestamp=may + timedelta(days=30), text="The CI runners now use arm64.")])
# A stand-in for the gate a retrieval sweep fits (`memlab eval` writes it to the run folder): it answers everything.
features = memlab.events.answerability.FEATURES
memlab.events.AnswerabilityGate(coef=(0.0,) * len(features), intercept=5.0, mean=(0.0,) * len(features),
                                scale=(1.0,) * len(features), threshold=0.5).save(
    Path("reports/latest/answerability.json"))

# --8<-- [start:retrieval]
mem = memlab.EventMemory(store, embedder, rendering="speaker_date")       # what is embedded
mem.add_session(session)
hits = mem.search("deploy-bot", "dan", "what did we change in May?",
                  memlab.SearchSettings(mode="hybrid", time="boost"),      # how it is searched
                  asked_at=datetime.now(timezone.utc),                     # time phrases count
                  gate=memlab.events.AnswerabilityGate.load("reports/latest/answerability.json"))  # or nothing
# --8<-- [end:retrieval]
print(f"{len(hits)} hit(s); first: {hits[0].text}")

# --8<-- [start:query-log]
from datetime import timedelta
log = memlab.QueryLog(enabled=True, retention=timedelta(days=90))
events = memlab.EventMemory(store, embedder, query_log=log)      # search and search_fused are recorded
facts = memlab.FactMemory(store, embedder, query_log=log)        # search (and preload_block) are recorded
# --8<-- [end:query-log]
events.search("deploy-bot", "dan", "which region runs payments?")
print(f"logged: {[q.text for q in memlab.events.logged_queries(store, 'deploy-bot', 'dan')]}")

# --8<-- [start:erasure]
mem.forget_user("deploy-bot", "dan", vacuum="wal")      # rows, files and WAL
# --8<-- [end:erasure]
print(f"after forget_user: {len(mem.search('deploy-bot', 'dan', 'payments'))} hit(s)")
