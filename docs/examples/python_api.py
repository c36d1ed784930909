from datetime import datetime, timezone
import memlab

store = memlab.open_store()                      # embedded default; open_store(dsn=...) for another PostgreSQL
now = datetime.now(timezone.utc)
s = memlab.Session(app_name="deploy-bot", user_id="dan", id="s1", events=[
    memlab.Event(id="e1", author="user", timestamp=now,
                 text="Our payments service runs in eu-west-1 and we deploy with Argo CD."),
    memlab.Event(id="e2", author="model", timestamp=now, text="Payments is", partial=True)])
mem = memlab.EventMemory(store, memlab.default_embedder(), granularity="event")   # or "chunk"
report = mem.add_session(s)                      # what was stored, and what was skipped and why
print(report.added, dict(report.skipped))        # 1 {'partial': 1}
hits = mem.search("deploy-bot", "dan", "how do we ship payments?",
                  memlab.SearchSettings(top_k=10, max_distance=0.6, strategy="auto",
                                        ef_search=40, iterative_scan="relaxed_order"))
print(hits[0].unit_id, hits[0].text, hits[0].distance, hits[0].event_ids)
from memlab import lab                           # the workbench's public face
exact = lab.FaissExact.from_memory(mem)          # ground truth: exact.search(app, user, query, top_k)
print(mem.explain("deploy-bot", "dan", "payments").plan)   # EXPLAIN (ANALYZE, BUFFERS)
mem.forget_user("deploy-bot", "dan")
