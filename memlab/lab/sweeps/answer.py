"""The answer sweep: does what a system retrieves let a model answer the question? For each question and chosen system,
a reader model answers from the system's top-k saved hits (each memory with its date and speaker), then a judge model
grades the reply by LongMemEval's per-type rules (memlab.lab.sweeps.answering); token F1 against the gold answer
(memlab.lab.metrics.answers) is measured beside it, without a model.

Options: AnswerOptions (a reader model is required; the judge defaults to it). A reply that is an abstention as a
whole ("I don't know", nothing else) is right on a question nothing in memory answers and wrong on an answerable
one, without a judge call; a reply that says anything more (a name beside "the breed is not mentioned") goes to the
judge, whose rule for a no-answer question makes any attempt at a concrete answer wrong. An empty reply (or one the
token limit cut before any text) is a reader error, not an abstention. An answerable question without a gold answer
text is skipped (counted in the report). A model that fails (unreachable, timeout, HTTP error, malformed reply)
fails that question only: its error is recorded in the `answers` table and counted, never ending the run. The
models' disk cache serves a second run of the same config, but for each model's first request (it learns which model
answers now); an empty reply and a verdict that does not parse are not cached (a rerun asks again)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.base.identity import run_events
from memlab.lab.base.options import option
from memlab.lab.base.tables import markdown_table
from memlab.lab.datasets.model import Dataset, Question
from memlab.lab.metrics.answers import is_empty_reply, token_f1
from memlab.lab.metrics.scoring import LONG_COLUMNS, SCORE_COLUMNS
from memlab.lab.metrics.uncertainty import bootstrap_ci
from memlab.lab.runs.folder import RunFolder, save_table
from memlab.lab.runs.records import Run
from memlab.lab.sweeps.answering import (
    VERDICT_SCHEMA,
    ContextItem,
    VerdictError,
    judge_messages,
    judge_rule,
    parse_verdict,
    pregrade,
    reader_messages,
)
from memlab.lab.sweeps.base import Sweep, SweepContext, distinct
from memlab.lab.systems.kinds import Env
from memlab.models import ChatClient, ChatReply, ChatRequest, ModelError, ModelSpec, scope_refs, session_ref, text_refs
from memlab.types import Event

TABLE = "answers"
DEFAULT_K = 5
READER_TOKENS = 64  # a short answer; the reader is told to reply in a few words
JUDGE_TOKENS = 200
METRICS = ("answer_accuracy", "answer_f1", "answer_errors", "answer_tokens_per_question",
           "answer_seconds_per_question")  # fmt: skip


@dataclass(frozen=True)
class AnswerOptions:
    reader: str = option(doc="the name of an openai-chat model under `models:` that answers from the retrieved "
                             "memories", blank=False)  # fmt: skip
    judge: str | None = option(None, "the openai-chat model under `models:` that grades the replies (default: the "
                                     "reader)", blank=False)  # fmt: skip
    systems: list[str] | None = option(None, "the systems whose hits are read (default: the configured ones)",
                                       min_items=1, blank=False)  # fmt: skip
    k: int = option(DEFAULT_K, "how many hits the reader sees (at most the run's k)", low=1, high=100)


# -- measuring ---------------------------------------------------------------------------------------------------


def _context(hits: pd.DataFrame, question: Question, events: dict[tuple, Event]) -> list[ContextItem]:
    """The question's hits as the reader sees them, best first: one item per hit, the hit's events in order (a
    chunk or session unit holds several turns; a fact cites the turns it was read from)."""
    items = []
    for keys in run_events(hits):
        said = [events[k] for k in ((question.app_name, question.user_id, s, e) for s, e in keys) if k in events]
        if not said:
            continue
        if len(said) == 1:
            items.append(ContextItem(said[0].text or "", said[0].author, said[0].timestamp))
        else:
            items.append(ContextItem(" / ".join(f"{e.author}: {e.text or ''}" for e in said), "", said[0].timestamp))
    return items


def _refs(hits: pd.DataFrame, question: Question, events: dict[tuple, Event]) -> tuple[str, ...]:
    """What stored memory the question's prompt holds (memlab.models.refs): the texts of the hits' events and
    their user, sessions and event ids, so erasing any of them drops the cached reader and judge replies."""
    app, user = question.app_name, question.user_id
    said = [events[k] for keys in run_events(hits) for k in ((app, user, s, e) for s, e in keys) if k in events]
    sessions = {s for keys in run_events(hits) for s, _ in keys if isinstance(s, str)}
    return tuple(dict.fromkeys([*text_refs(e.text for e in said), *scope_refs(app, user, None, [e.id for e in said]),
                                *(session_ref(app, user, s) for s in sorted(sessions))]))  # fmt: skip


def _complete_unique(client: ChatClient, requests: Sequence[ChatRequest], *,
                     cache_if: Callable[[str], bool] | None = None) -> list[ChatReply | ModelError]:  # fmt: skip
    """Each distinct request sent once (two systems that retrieve the same hits give the reader the same prompt),
    the replies handed back in input order; at most the model's concurrency in flight. The cached reply records
    the refs of every request it answers; `cache_if` false keeps a reply out of the cache (a rerun asks again)."""
    keys = [json.dumps([r.messages, r.json_schema, r.schema_name, r.max_tokens], sort_keys=True) for r in requests]
    unique: dict[str, ChatRequest] = {}
    for key, request in zip(keys, requests, strict=True):
        seen = unique.get(key)
        unique[key] = request if seen is None else replace(seen, refs=tuple(dict.fromkeys(seen.refs + request.refs)))
    replies = dict(zip(unique, client.complete_many(list(unique.values()), cache_if=cache_if), strict=True))
    return [replies[key] for key in keys]


def usable_verdict(text: str) -> bool:
    """Whether the judge's reply parses as a verdict: one that does not is never cached (a rerun asks again)."""
    try:
        parse_verdict(text)
    except VerdictError:
        return False
    return True


def _has_gold(question: Question) -> bool:
    """Whether the question has a gold answer text (labels read back from parquet hold NaN for none)."""
    return isinstance(question.answer, str) and bool(question.answer.strip())


def _reply_error(reply: ChatReply | ModelError | BaseException, who: str) -> str | None:
    """`reader (timeout): ...`: who failed, the ModelError's kind, its one-line message."""
    if not isinstance(reply, BaseException):
        return None
    return f"{who} ({getattr(reply, 'kind', 'error')}): {reply}"


def _tokens(reply: ChatReply | None) -> float:
    if reply is None or (reply.prompt_tokens is None and reply.completion_tokens is None):
        return np.nan
    return float((reply.prompt_tokens or 0) + (reply.completion_tokens or 0))


def _chosen(options: dict[str, Any], context: SweepContext, dataset: str) -> list[str]:
    ran = [s.name for s in context.systems]
    names = list(options.get("systems") or [s["name"] for s in context.config.get("systems", [])] or ran)
    missing = [n for n in names if n not in ran]
    if missing:
        raise ConfigError(f"options.answer.systems: {missing} did not run on {dataset!r}; name systems of the run "
                          f"({ran})")  # fmt: skip
    return names


def answer_questions(env: Env, dataset: Dataset, runs: dict[str, Run], systems: Sequence[str],
                     options: dict[str, Any]) -> pd.DataFrame:  # fmt: skip
    """One row per (system, question with something to grade): the reader's reply from the system's top-k hits,
    abstained or not, the judge's verdict and reason, token F1, tokens and seconds; a model failure is that row's
    `error`."""
    reader_name = options["reader"]
    judge_name = options.get("judge") or reader_name
    reader, judge = env.chat(reader_name), env.chat(judge_name)
    k = min(int(options.get("k", DEFAULT_K)), env.k)
    events = {(s.app_name, s.user_id, s.id, e.id): e for s in dataset.sessions() for e in s.events}
    graded = [q for q in dataset.questions if not q.answerable or _has_gold(q)]
    cases: list[tuple[str, Question, int]] = []
    requests: list[ChatRequest] = []
    for system in systems:
        frame = runs[system].frame
        frame = frame[(frame["rank"] > 0) & (frame["rank"] <= k)].sort_values("rank", kind="stable")
        by_question = dict(tuple(frame.groupby("question_id", sort=False)))
        for q in graded:
            hits = by_question.get(q.id, frame.iloc[:0])
            context = _context(hits, q, events)
            cases.append((system, q, len(context)))
            requests.append(ChatRequest(reader_messages(q, context), max_tokens=READER_TOKENS,
                                        refs=_refs(hits, q, events)))
    answers = _complete_unique(reader, requests, cache_if=lambda text: not is_empty_reply(text))
    rows = []
    to_judge: list[int] = []
    for (system, q, seen), reply in zip(cases, answers, strict=True):
        ok = reply if isinstance(reply, ChatReply) else None
        text = ok.text.strip() if ok is not None else ""
        pre = pregrade(q, text) if ok is not None else None
        abstained = pre is not None and pre.abstained
        row = {"dataset": dataset.name, "system": system, "question_id": q.id, "question_type": q.qtype,
               "answerable": q.answerable, "rule": judge_rule(q), "gold": q.answer or "", "hits_read": seen,
               "answer": text, "abstained": abstained, "verdict": None, "judge_reason": "",
               "f1": np.nan if pre is None or pre.error else (token_f1(text, q.answer) if q.answerable
                                                                    else float(abstained)),
               "reader_tokens": _tokens(ok), "reader_seconds": ok.seconds if ok is not None else np.nan,
               "judge_tokens": np.nan, "judge_seconds": np.nan, "cached": ok is not None and ok.cached,
               "error": _reply_error(reply, "reader") or "", "reader": reader_name, "reader_model": reader.spec.model,
               "judge": judge_name, "judge_model": judge.spec.model}  # fmt: skip
        if pre is not None and pre.error:  # an empty reply: the reader failed (see the module's docstring)
            row["error"] = pre.error
        elif pre is not None and pre.abstained:  # decided without the judge
            row.update(verdict=pre.verdict, judge_reason=pre.reason)
        elif pre is not None:
            to_judge.append(len(rows))
        rows.append(row)
    verdicts = _complete_unique(judge, [
        ChatRequest(judge_messages(cases[i][1], rows[i]["answer"]), json_schema=VERDICT_SCHEMA, schema_name="verdict",
                    max_tokens=JUDGE_TOKENS, refs=requests[i].refs) for i in to_judge],  # the answer quotes the hits
        cache_if=usable_verdict)  # a rerun asks again for a verdict that does not parse
    for i, reply in zip(to_judge, verdicts, strict=True):
        row = rows[i]
        if not isinstance(reply, ChatReply):
            row["error"] = _reply_error(reply, "judge")
            continue
        row.update(judge_tokens=_tokens(reply), judge_seconds=reply.seconds, cached=row["cached"] and reply.cached)
        try:
            verdict = parse_verdict(reply.text)
        except VerdictError as exc:
            row["error"] = f"judge (malformed): {exc}"
            continue
        row.update(verdict=verdict.correct, judge_reason=verdict.reason)
    frame = pd.DataFrame(rows)
    if len(frame):
        frame["verdict"] = frame.verdict.astype("boolean")  # missing where the question failed
    return frame


# -- scoring -----------------------------------------------------------------------------------------------------


def _summary(rows: pd.DataFrame) -> dict[str, float]:
    judged = rows.verdict.dropna().astype(float).to_numpy()
    lo, hi = bootstrap_ci(judged)
    spent = rows.reader_tokens.add(rows.judge_tokens, fill_value=0).where(rows.reader_tokens.notna()
                                                                           | rows.judge_tokens.notna())  # fmt: skip
    return {"questions": len(rows), "graded": len(judged),
            "answer_accuracy": float(judged.mean()) if len(judged) else np.nan,
            "answer_accuracy_ci_low": lo, "answer_accuracy_ci_high": hi,
            "answer_f1": float(rows.f1.mean()) if rows.f1.notna().any() else np.nan,
            "answer_errors": float((rows.error.fillna("") != "").sum()),
            "answer_abstained": float(rows.abstained.mean()) if len(rows) else np.nan,
            "answer_tokens_per_question": float(spent.mean()) if spent.notna().any() else np.nan,
            "answer_seconds_per_question": float(rows.reader_seconds.add(rows.judge_seconds, fill_value=0).mean())}


def answer_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per system, overall (question_type "all") and per question type: accuracy with its 95% bootstrap interval
    over the graded questions, F1, errors, abstentions, tokens and seconds per question."""
    rows = []
    for system, by_system in frame.groupby("system", sort=False):
        groups = [("all", by_system)]
        if by_system.question_type.nunique() > 1:
            groups += list(by_system.groupby("question_type", sort=True))
        rows += [{"system": system, "question_type": qtype, **_summary(g)} for qtype, g in groups]
    return pd.DataFrame(rows)


class AnswerSweep(Sweep):
    """A reader answers from each system's top-k hits; a judge grades the answers."""

    name = "answer"
    measures = True
    options_type = AnswerOptions

    def planned(self, options: dict[str, Any], config: dict[str, Any]) -> int:
        """A reader and a judge pass over the questions per system read."""
        return 2 * distinct(options.get("systems") or [s.get("name") for s in config.get("systems") or []] or [""])

    def check_models(self, options: dict[str, Any], models: dict[str, ModelSpec], source: str) -> None:
        chat = sorted(n for n, spec in models.items() if spec.kind == "openai-chat")
        for key in ("reader", "judge"):
            name = options.get(key)
            if name is not None and (name not in models or models[name].kind != "openai-chat"):
                raise ConfigError(f"{source}: options.answer.{key} {name!r} is not an openai-chat model of the "
                                  f"models: section; openai-chat models configured: {chat or 'none'}")  # fmt: skip

    def measure(self, env: Env, dataset: Dataset, options: dict[str, Any], context: SweepContext,
                out: Path) -> None:  # fmt: skip
        if not context.systems:  # a data set without questions runs no system: nothing to answer
            return
        systems = _chosen(options, context, dataset.name)
        runs = {s: Run.load(Run(dataset.name, s, pd.DataFrame()).path_in(out)) for s in systems}
        save_table(out, TABLE, dataset.name, answer_questions(env, dataset, runs, systems, options))

    def scores(self, folder: RunFolder, dataset: str, options: dict[str, Any], base: pd.DataFrame) -> pd.DataFrame:
        frame = folder.table(TABLE, dataset)
        if frame is None or frame.empty:
            return pd.DataFrame(columns=SCORE_COLUMNS)
        out = []
        graded = {"answer_accuracy", "answer_accuracy_ci_low", "answer_accuracy_ci_high"}  # over graded answers
        for r in answer_summary(frame).to_dict("records"):
            group, value = ("", "") if r["question_type"] == "all" else ("qtype", str(r["question_type"]))
            for metric in (*METRICS, "answer_accuracy_ci_low", "answer_accuracy_ci_high"):
                if not pd.isna(r[metric]):
                    n = r["graded"] if metric in graded else r["questions"]
                    out.append((dataset, r["system"], metric, group, value, float(r[metric]), int(n)))
        return pd.DataFrame(out, columns=LONG_COLUMNS)

    def section(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
        frame = folder.table(TABLE, dataset)
        if frame is None:
            return None
        lines = [_models_line(frame, options)]
        skipped = sum(1 for q in folder.questions(dataset) if q.answerable and not _has_gold(q))
        if skipped:
            lines.append(f"{skipped} answerable question(s) without a gold answer text were skipped.")
        if frame.empty:
            return "\n\n".join([*lines, "No question to answer."])
        table = answer_summary(frame)
        table.insert(table.columns.get_loc("answer_accuracy") + 1, "95% CI",
                     [f"{lo:.3f}-{hi:.3f}" if not pd.isna(lo) else "" for lo, hi in
                      zip(table.answer_accuracy_ci_low, table.answer_accuracy_ci_high, strict=True)])  # fmt: skip
        table = table.drop(columns=["answer_accuracy_ci_low", "answer_accuracy_ci_high"]).rename(columns={
            "question_type": "type", "answer_accuracy": "accuracy", "answer_f1": "F1", "answer_errors": "errors",
            "answer_abstained": "abstained", "answer_tokens_per_question": "tokens/q",
            "answer_seconds_per_question": "seconds/q"}).astype({"errors": int})  # fmt: skip
        lines += [markdown_table(table),
                  "`accuracy`: the judge's verdicts over the graded questions (those without an error), with its 95% "
                  "bootstrap interval; `F1`: token F1 of the reply against the gold answer (a no-answer question "
                  "scores 1 when the reader abstains); `abstained`: share of replies that decline to answer; "
                  "`tokens/q` and `seconds/q`: reader and judge together (0 seconds when served from the cache)."]
        errors = frame[frame.error.fillna("") != ""]
        if len(errors):
            lines.append(f"{len(errors)} question(s) failed (first: {errors.error.iloc[0]}); see tables/"
                         f"{TABLE}__*.parquet, column `error`.")  # fmt: skip
        return "\n\n".join(lines)


def _models_line(frame: pd.DataFrame, options: dict[str, Any]) -> str:
    """Which models produced the figures (a fake server or a tiny model makes a smoke run, not a quality figure)."""
    def first(column: str, default: str) -> str:
        return str(frame[column].iloc[0]) if column in frame and len(frame) else default

    reader = options.get("reader", "")
    judge = options.get("judge") or reader
    return (f"Reader `{first('reader', reader)}` (model `{first('reader_model', '?')}`), judge "
            f"`{first('judge', judge)}` (model `{first('judge_model', '?')}`): these figures are only as good as "
            "these models; a fake server or a tiny model makes a smoke run, not a quality figure.")


__all__ = ["METRICS", "TABLE", "AnswerSweep", "answer_questions", "answer_summary"]
