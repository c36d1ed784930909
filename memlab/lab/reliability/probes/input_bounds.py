"""Input bounds: what a user's files and configs can make memlab do without saying so.

- Labels pointing outside the data, in every data-set format: each must be refused (memlab JSONL, fixtures,
  LongMemEval) or dropped and counted where the run reports it (BEIR, LoCoMo, judged sets), and a set that lost
  most of its labels refused. A label neither refused nor counted is `silently_dropped_labels`.
- Judgments in every order (one file, two files, both file orders): whether assessors disagree, and the labels
  that result, must not depend on the order; each set of judgments with two outcomes is `order_dependent_verdicts`.
- Configs that would expand past the size bound, and every number that sizes work over its ceiling: each one
  accepted is `unbounded_expansions` (nothing is expanded: the configs are only parsed).
- JSON and YAML nested past the bound, in every reader of user files: data sets of each format, judgments, query
  files, pools, query logs, baselines, configs, tolerances.
Any input that ends in something other than a memlab error or a clean load is `tracebacks`. Ordinary inputs of
the same shapes must still load (`ordinary_inputs_refused`), so no zero is bought by refusing everything. Files
are written under `work`; nothing touches the database."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import memlab
from memlab.lab.config.expansion import MAX_RUNS, planned_runs
from memlab.lab.config.parse import load_config, load_suite, parse_config, suite_names
from memlab.lab.datasets.formats.jsonl import write_jsonl
from memlab.lab.datasets.generated.templates import load_templates
from memlab.lab.datasets.judged.pools import POOL_KIND
from memlab.lab.datasets.judged.queries import read_queries
from memlab.lab.datasets.judged.sampling import read_plain_queries
from memlab.lab.datasets.label_loss import dropped_warning
from memlab.lab.datasets.loaders import load_dataset
from memlab.lab.datasets.model import Dataset, Question, UserHistory
from memlab.lab.judging.pool import pool_queries
from memlab.lab.reliability.probes.family import Family
from memlab.lab.report.gate import load_metrics, load_rules

MUST_BE_ZERO = ["silently_dropped_labels", "order_dependent_verdicts", "unbounded_expansions", "tracebacks",
                "ordinary_inputs_refused"]  # fmt: skip
APP = "input-bounds"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DEEP = "[" * 50_000 + "]" * 50_000  # past the JSON decoder's stack
DEEPISH = "[" * 300 + "]" * 300  # decodes, but deeper than any memlab file
TEXTS = ["I adopted a grey cat called Miso last spring.", "My sister lives in Porto and teaches piano.",
         "I started training for a half marathon in October.", "My favourite food is mushroom risotto.",
         "I work night shifts as a nurse at the city hospital.", "I drive a small red hatchback to work."]  # fmt: skip


def _attempt(family: Family, case: str, call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", value), ("refused", the memlab error) or ("traceback", the exception), counting a traceback."""
    try:
        return "ok", call()
    except memlab.MemlabError as exc:
        return "refused", exc
    except Exception as exc:  # what this family looks for: any other ending is a crash a user would see
        family.problem("tracebacks", f"{case}: {type(exc).__name__}: {str(exc)[:160]}")
        return "traceback", exc


# -- labels pointing outside the data -----------------------------------------------------------------------------


def _beir(folder: Path, stray: int, kept: int = 4) -> Path:
    """A BEIR folder: 6 documents, q1..q4 each judging one of them, q1 also `stray` documents it lacks."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n"
                                                 for i, t in enumerate(TEXTS)))  # fmt: skip
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"question {i}"}) + "\n"
                                                  for i in range(kept)))  # fmt: skip
    rows = [f"q{i}\td{i}\t1" for i in range(kept)] + [f"q0\tgone{i}\t1" for i in range(stray)]
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    return folder


def _locomo(path: Path, stray: int) -> Path:
    turns = [{"speaker": "Ana" if i % 2 == 0 else "Ben", "dia_id": f"D1:{i + 1}", "text": t}
             for i, t in enumerate(TEXTS)]  # fmt: skip
    qa = [{"question": f"question {i}", "answer": "x", "evidence": [f"D1:{i + 1}"], "category": 4} for i in range(4)]
    qa[0]["evidence"] += [f"D9:{i + 1}" for i in range(stray)]
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": {"speaker_a": "Ana", "speaker_b": "Ben",
                                                                      "session_1": turns,
                                                                      "session_1_date_time": "1:56 pm on 8 May, 2023"},
                                 "qa": qa}]))  # fmt: skip
    return path


def _sessions(path: Path) -> list[memlab.Session]:
    """Two users' sessions as a memlab JSONL file (no questions)."""
    sessions = [memlab.Session(APP, user, f"{user}-s{n}", [memlab.Event(f"{user}-s{n}-e{i}", "user",
                                                                         T0 + timedelta(days=n, minutes=i), t)
                                                           for i, t in enumerate(TEXTS[3 * n: 3 * n + 3])])
                for user in ("u1", "u2") for n in range(2)]  # fmt: skip
    write_jsonl(Dataset("logs", [UserHistory(APP, u, [s for s in sessions if s.user_id == u]) for u in ("u1", "u2")],
                        []), path)  # fmt: skip
    return sessions


def _judged_files(work: Path) -> dict[str, Path]:
    """A judged set's query file, sessions file and pool (every event of the asking user pooled)."""
    work.mkdir(parents=True, exist_ok=True)
    sessions = _sessions(work / "logs.jsonl")
    queries = [("qa", "u1"), ("qb", "u2")]
    at = T0 + timedelta(days=30)
    (work / "queries.jsonl").write_text("".join(json.dumps({"query_id": q, "app": APP, "user": u, "text": f"about {q}",
                                                            "asked_at": at.isoformat(), "origin": "file"}) + "\n"
                                                for q, u in queries))  # fmt: skip
    pooled = [{"query_id": q, "app": APP, "user": u, "text": f"about {q}", "asked_at": at.isoformat(), "origin": "file",
               "hits": [{"event_id": e.id, "session": s.id, "text": e.text, "at": e.timestamp.isoformat(),
                         "author": e.author, "found_by": [{"system": "event", "rank": 1}]}
                        for s in sessions if s.user_id == u for e in s.events]} for q, u in queries]  # fmt: skip
    (work / "pool.json").write_text(json.dumps({"memlab": POOL_KIND, "version": 1, "config": "probe", "dataset": "logs",
                                                "depth": 3, "created_at": at.isoformat(),
                                                "systems": [{"name": "event"}], "queries": pooled}))  # fmt: skip
    return {"queries": work / "queries.jsonl", "sessions": work / "logs.jsonl", "pool": work / "pool.json"}


def _judgment(event: str, relevance: int, assessor: str = "ana", at: datetime = T0, query: str = "qa") -> dict:
    return {"query": query, "event_id": event, "relevance": relevance, "assessor": assessor, "time": at.isoformat()}


def _write_lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _judged(files: dict[str, Path], judgments: list[Path] | Path, name: str = "judged") -> Dataset:
    return load_dataset({"name": name, "format": "judged", **{k: str(v) for k, v in files.items()},
                         "judgments": [str(p) for p in judgments] if isinstance(judgments, list) else str(judgments)})


def _drop_events(path: Path, events: set[str]) -> None:
    """The sessions file without some events (erased since the pool was made)."""
    lines = []
    for raw in path.read_text().splitlines():
        record = json.loads(raw)
        record["events"] = [e for e in record["events"] if e["id"] not in events]
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")


def _counted(family: Family, case: str, stray: int, call: Callable[[], Dataset], *, refused_ok: bool) -> None:
    """A load given `stray` labels pointing outside the data: refused, or every stray label counted (in the
    label loss the run's manifest records and in its warning); a set that lost most of its labels refused."""
    family.add("label_cases")
    ended, value = _attempt(family, case, call)
    if ended == "refused":
        if not refused_ok:
            family.problem("ordinary_inputs_refused", f"{case}: refused: {str(value)[:160]}")
        return
    if ended != "ok":
        return
    lost, given = value.label_loss()
    warning = dropped_warning(value) or ""
    if lost != stray or (stray and f"{lost} of {given} labels" not in warning):
        family.problem("silently_dropped_labels", f"{case}: {stray} stray label(s), {lost} counted; warning "
                                                  f"{warning[:120]!r}")  # fmt: skip
    elif given and lost * 2 > given:
        family.problem("silently_dropped_labels", f"{case}: {lost} of {given} labels lost, and not refused")


def _orphan_labels(family: Family, work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    for stray in (0, 1, 2):
        _counted(family, f"beir with {stray} stray qrels", stray,
                 lambda s=stray: load_dataset({"name": "b", "format": "beir", "path": str(_beir(work / f"b{s}", s))}),
                 refused_ok=False)  # fmt: skip
    _counted(family, "beir mostly stray", 8, lambda: load_dataset(
        {"name": "b", "format": "beir", "path": str(_beir(work / "b-most", 8))}), refused_ok=True)  # fmt: skip
    for stray, refused_ok in ((0, False), (1, False), (9, True)):
        _counted(family, f"locomo with {stray} stray evidence ids", stray, lambda s=stray: load_dataset(
            {"name": "l", "format": "locomo", "path": str(_locomo(work / f"l{s}.json", s))}),
            refused_ok=refused_ok)  # fmt: skip
    files = _judged_files(work / "judged")
    rows = [_judgment("u1-s0-e0", 1), _judgment("u1-s0-e1", 1), _judgment("u1-s1-e0", 1), _judgment("u1-s1-e1", 0)]
    judgments = _write_lines(work / "judged" / "j.jsonl", rows)
    _counted(family, "judged set, every event held", 0, lambda: _judged(files, judgments), refused_ok=False)
    _drop_events(files["sessions"], {"u1-s0-e0"})
    _counted(family, "judged set, a relevant event erased", 1, lambda: _judged(files, judgments), refused_ok=False)
    _drop_events(files["sessions"], {"u1-s0-e1"})
    _counted(family, "judged set, most relevant events erased", 2, lambda: _judged(files, judgments),
             refused_ok=True)  # fmt: skip
    _refused_outright(family, work)


def _refused_outright(family: Family, work: Path) -> None:
    """memlab JSONL, fixtures and LongMemEval name every label: one pointing outside the data is refused."""
    data = Dataset("d", [UserHistory(APP, "u1", _sessions(work / "plain.jsonl")[:2])],
                   [Question("q1", APP, "u1", "what pet?", ("u1-s0-e0",))])  # fmt: skip
    path = write_jsonl(data, work / "data.jsonl")
    stray = path.read_text().replace('"relevant": ["u1-s0-e0"]', '"relevant": ["u1-s0-e0", "nowhere"]')
    (work / "stray.jsonl").write_text(stray)
    day = T0.strftime("%Y/%m/%d (%a) %H:%M")
    lme = [{"question_id": "k1", "question_type": "knowledge-update", "question": "what pet?", "answer": "a cat",
            "question_date": day, "haystack_session_ids": ["s1"], "haystack_dates": [day],
            "haystack_sessions": [[{"role": "user", "content": TEXTS[0], "has_answer": True}]],
            "answer_session_ids": ["s1", "elsewhere"]}]  # fmt: skip
    (work / "lme.json").write_text(json.dumps(lme))
    fixture = {"app": APP, "user": "u9", "sessions": [{"id": "f-s1", "events": [
        {"id": "f-e1", "author": "user", "at": T0.isoformat(), "text": TEXTS[0]}]}],
        "queries": [{"id": "f-q1", "text": "what pet?", "relevant": ["f-e1", "f-e9"], "asked_at": T0.isoformat()}]}
    (work / "fixture.json").write_text(json.dumps(fixture))
    for case, spec in (("memlab jsonl", {"format": "memlab", "path": str(work / "stray.jsonl")}),
                       ("longmemeval", {"format": "longmemeval", "path": str(work / "lme.json")}),
                       ("fixtures", {"format": "fixtures", "path": str(work / "fixture.json")})):  # fmt: skip
        family.add("label_cases")
        ended, value = _attempt(family, f"{case} with a stray label", lambda spec=spec: load_dataset({"name": "x",
                                                                                                    **spec}))
        if ended == "ok" and value.label_loss()[0] == 0:
            family.problem("silently_dropped_labels", f"{case}: a label naming no event was loaded, not counted")
    ended, _ = _attempt(family, "memlab jsonl, clean", lambda: load_dataset({"name": "d", "format": "memlab",
                                                                            "path": str(path)}))  # fmt: skip
    if ended != "ok":
        family.problem("ordinary_inputs_refused", "a clean memlab JSONL file was refused")


# -- judgments in every order -------------------------------------------------------------------------------------


def _order_sets(family: Family, work: Path) -> None:
    """Each set of judgments loaded in every line order, and split over two files in both file orders: one
    outcome each (refused, or the same labels)."""
    files = _judged_files(work)
    late = T0 + timedelta(hours=1)
    sets = {
        "a change of mind against another assessor": [_judgment("u1-s0-e0", 1), _judgment("u1-s0-e0", 1, "bob"),
                                                      _judgment("u1-s0-e0", 0, "bob", late)],
        "a change of mind ending in agreement": [_judgment("u1-s0-e0", 1), _judgment("u1-s0-e0", 0, "bob"),
                                                 _judgment("u1-s0-e0", 1, "bob", late), _judgment("u1-s0-e1", 0)],
        "one assessor contradicting themself at one time": [_judgment("u1-s0-e0", 1), _judgment("u1-s0-e0", 0)],
        "two queries, two assessors agreeing": [_judgment("u1-s0-e0", 1), _judgment("u1-s0-e0", 1, "bob"),
                                                _judgment("u2-s0-e0", 0, query="qb"),
                                                _judgment("u2-s0-e1", 1, "bob", query="qb")],
    }  # fmt: skip
    count = 0
    for name, rows in sets.items():
        family.add("order_sets")
        outcomes: set[str] = set()
        orders = list(itertools.permutations(rows))
        layouts = [[list(o)] for o in orders] + [[list(o[:cut]), list(o[cut:])] for o in orders
                                                 for cut in range(1, len(rows))]  # fmt: skip
        for parts in layouts:
            count += 1
            paths = [_write_lines(work / f"j{count}-{i}.jsonl", part) for i, part in enumerate(parts)]
            ended, value = _attempt(family, f"judgments: {name}", lambda paths=paths: _judged(files, paths))
            if ended == "ok":
                agreement = json.dumps(value.pool.get("agreement"), sort_keys=True, default=str)
                outcomes.add(value.checksum() + agreement)
            else:
                outcomes.add(ended)
        family.add("judgment_orders", len(layouts))
        if len(outcomes) > 1:
            family.problem("order_dependent_verdicts", f"{name}: {len(outcomes)} outcomes over {len(layouts)} orders")
        if name.startswith("two queries") and outcomes != {o for o in outcomes if o not in ("refused", "traceback")}:
            family.problem("ordinary_inputs_refused", f"{name}: refused")


# -- configs past their bounds ------------------------------------------------------------------------------------

SYNTH = {"name": "s", "format": "synth", "users": 4, "max_events": 40}
MODEL = {"name": "m", "kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "x"}


def _over_bounds() -> list[tuple[str, dict[str, Any]]]:
    """Configs each over one bound: the expanded size, or a number that sizes work."""
    base: dict[str, Any] = {"name": "b", "datasets": [SYNTH], "systems": [{"name": "e", "strategy": "exact"}],
                            "sweeps": []}  # fmt: skip

    def with_(**changes: Any) -> dict[str, Any]:
        return {**base, **changes}

    return [
        ("retrieval authors x caps", with_(sweeps=["retrieval"], options={"retrieval": {
            "per_session": list(range(1, 1001)), "authors": [f"a{i}" for i in range(1000)]}})),
        ("data sets x systems x cut-off grid", with_(datasets=[{**SYNTH, "name": f"s{i}"} for i in range(200)],
                                                    systems=[{"name": f"e{i}"} for i in range(50)], sweeps=["cutoff"],
                                                    options={"cutoff": {"grid": [0.001 * i for i in range(1, 300)]}})),
        ("granularity chunk list", with_(datasets=[{**SYNTH, "name": f"s{i}"} for i in range(150)],
                                         sweeps=["granularity"],
                                         options={"granularity": {"chunks": [[i, 0] for i in range(1, 1001)]}})),
        ("filtered queries", with_(sweeps=["filtered"], options={"filtered": {"queries": 100_000}})),
        ("model concurrency", with_(models=[{**MODEL, "concurrency": 10**6}])),
        ("model retries", with_(models=[{**MODEL, "retries": 10**6}])),
        ("model timeout", with_(models=[{**MODEL, "timeout": 1e9}])),
        ("model backoff", with_(models=[{**MODEL, "backoff": 1e6}])),
        ("model max_tokens", with_(models=[{**MODEL, "max_tokens": 10**9}])),
        ("system candidates", with_(systems=[{"name": "e", "strategy": "exact", "candidates": 10**8}])),
        ("system max_scan_tuples", with_(systems=[{"name": "e", "max_scan_tuples": 2 * 10**9}])),
        ("re-rank depth", with_(systems=[{"name": "e", "rerank": {"model": "m", "depth": 10**6}}])),
        ("filtered k", with_(options={"filtered": {"k": 10**8}})),
        ("filtered background tenants", with_(options={"filtered": {"background_tenants": 10**8}})),
        ("filtered scan tuples", with_(options={"filtered": {"max_scan_tuples": [2 * 10**9]}})),
        ("filtered shares", with_(options={"filtered": {"shares": [0.9, 0.9]}})),
        ("filtered rows", with_(options={"filtered": {"total_rows": 10**12}})),
        ("labels depth", with_(options={"labels": {"depths": [10**6]}})),
        ("labels pool subsets", with_(sweeps=["labels"], options={"labels": {"systems": [f"s{i}" for i in range(60)],
                                                                           "pool_sizes": [30]}})),
        ("ingest repeat", with_(options={"ingest": {"repeat": 10**6}})),
        ("k", with_(k=10**7)),
        ("synth users x events", with_(datasets=[{**SYNTH, "users": 10_000, "max_events": 100_000}])),
        ("embedder batch", with_(embedders=[{"name": "default", "kind": "packaged", "batch_size": 10**8}])),
        ("embedder retries", with_(embedders=[{"name": "default", "kind": "packaged", "retries": 10**8}])),
    ]  # fmt: skip


def _configs(family: Family, work: Path) -> None:
    for case, config in _over_bounds():
        family.add("bound_cases")
        started = time.perf_counter()
        ended, value = _attempt(family, f"config: {case}",
                                lambda config=config, case=case: parse_config(config, source=case))  # fmt: skip
        if ended == "ok":
            planned = sum(sum(p.values()) for p in planned_runs(value.resolved).values())
            family.problem("unbounded_expansions", f"{case}: accepted ({planned:,} runs planned)")
        elif time.perf_counter() - started > 5:
            family.problem("unbounded_expansions", f"{case}: took {time.perf_counter() - started:.0f} s to refuse")
    family.add("bound_cases")
    small = parse_config({"name": "p", "datasets": [SYNTH]})
    ended, _ = _attempt(family, "pool depth", lambda: pool_queries(small, work / "none.jsonl", 10**8, None))
    if ended == "ok":
        family.problem("unbounded_expansions", "pool depth: 100,000,000 events per system per query accepted")
    for name in suite_names():  # positive controls: every shipped suite is within every bound
        family.add("ordinary_configs")
        ended, value = _attempt(family, f"suite {name}", lambda name=name: load_suite(name))
        if ended != "ok" or sum(sum(p.values()) for p in planned_runs(value.resolved).values()) > MAX_RUNS:
            family.problem("ordinary_inputs_refused", f"suite {name}: {str(value)[:160]}")


# -- nesting past the bound ---------------------------------------------------------------------------------------


def _nested_cases(work: Path, deep: str) -> list[tuple[str, Callable[[], Any]]]:
    """Every reader of a user's file, each given a file with `deep` nesting where a value goes."""
    work.mkdir(parents=True, exist_ok=True)
    session = json.dumps({"type": "session", "user": "u", "id": "s", "events": [
        {"id": "e", "author": "user", "at": T0.isoformat(), "text": TEXTS[0]}]})  # fmt: skip
    (work / "data.jsonl").write_text(session + '\n{"type": "question", "id": "q", "user": "u", "text": ' + deep + "}\n")
    beir = _beir(work / "beir", 0)
    with (beir / "corpus.jsonl").open("a") as f:
        f.write('{"_id": "dx", "text": ' + deep + "}\n")
    (work / "list.json").write_text(f"[{deep}]")
    (work / "block.yaml").write_text("app: a\nuser: u\nsessions:\n" + "".join("  " * i + "-\n" for i in range(1, 700)))
    (work / "flow.json").write_text('{"app": "a", "user": "u", "sessions": ' + deep + "}")
    files = _judged_files(work / "judged")
    judgments = _write_lines(work / "judged" / "j.jsonl", [_judgment("u1-s0-e0", 1)])
    deep_line = work / "deep-line.jsonl"
    deep_line.write_text(deep + "\n")
    (work / "pool.json").write_text(deep)
    (work / "log.jsonl").write_text('{"user": "u", "text": "hi", "asked_at": "2026-01-01T00:00:00Z"}\n' + deep + "\n")
    (work / "baseline.json").write_text('{"metrics": ' + deep + "}")
    (work / "config.yaml").write_text("name: deep\ndescription: " + deep + "\n")
    (work / "tolerances.yaml").write_text("rules: " + deep + "\n")
    (work / "templates.yaml").write_text("templates:\n" + "".join("  " * i + "-\n" for i in range(1, 700)))

    def judged(**swap: Path) -> Dataset:
        return _judged({**files, **{k: v for k, v in swap.items() if k != "judgments"}},
                       swap.get("judgments", judgments))  # fmt: skip

    return [
        ("memlab jsonl", lambda: load_dataset({"name": "d", "format": "memlab", "path": str(work / "data.jsonl")})),
        ("beir corpus", lambda: load_dataset({"name": "b", "format": "beir", "path": str(beir)})),
        ("longmemeval", lambda: load_dataset({"name": "l", "format": "longmemeval", "path": str(work / "list.json")})),
        ("locomo", lambda: load_dataset({"name": "l", "format": "locomo", "path": str(work / "list.json")})),
        ("fixture yaml (block)", lambda: load_dataset({"name": "f", "format": "fixtures",
                                                       "path": str(work / "block.yaml")})),
        ("fixture json", lambda: load_dataset({"name": "f", "format": "fixtures", "path": str(work / "flow.json")})),
        ("judged: query file", lambda: read_queries(deep_line)),
        ("judged: judgments", lambda: judged(judgments=deep_line)),
        ("judged: pool", lambda: judged(pool=work / "pool.json")),
        ("judged: sessions", lambda: judged(sessions=deep_line)),
        ("query log", lambda: read_plain_queries(work / "log.jsonl")),
        ("baseline", lambda: load_metrics(work / "baseline.json", what="baseline")),
        ("config", lambda: load_config(work / "config.yaml")),
        ("tolerances", lambda: load_rules(work / "tolerances.yaml")),
        ("question templates", lambda: load_templates(work / "templates.yaml")),
    ]  # fmt: skip


def _nesting(family: Family, work: Path) -> None:
    for label, deep in (("deep", DEEP), ("deepish", DEEPISH)):
        for case, call in _nested_cases(work / label, deep):
            family.add("nesting_cases")
            ended, _ = _attempt(family, f"{case} ({label})", call)
            if ended == "ok":
                family.problem("tracebacks", f"{case} ({label}): nesting past the bound was read as data")


def input_bounds_family(db: memlab.Store, embedder: memlab.Embedder, work: Path) -> Family:
    """Labels outside the data, judgments in every order, configs past their bounds and nesting past the bound in
    every reader; all must-be-zero (the store and model are not used: these are checks of input)."""
    family = Family("input_bounds", must_be_zero=list(MUST_BE_ZERO))
    for figure in MUST_BE_ZERO:
        family.add(figure, 0)
    work = Path(work) / "input_bounds"
    _orphan_labels(family, work / "labels")
    _order_sets(family, work / "orders")
    _configs(family, work / "configs")
    _nesting(family, work / "nesting")
    family.notes.append("cases: " + ", ".join(f"{k} {v}" for k, v in family.figures.items() if k not in MUST_BE_ZERO))
    return family
