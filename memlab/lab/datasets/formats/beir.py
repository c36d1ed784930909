"""Load a corpus in the BEIR layout (Thakur et al., 2021) into a Dataset (`format: beir`).

The folder holds `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` (`_id`, `text`) and `qrels/<split>.tsv`
(`query-id`, `corpus-id`, `score`, tab-separated, with a header line; split `test` unless told).

The corpus is one user's memory (app `beir`, user = the folder's name): each document is a session of one
event whose id is the document's `_id` and whose text is its title and text joined by a blank line (author
`document`; times are made up, one second apart in corpus order, since BEIR has none). Each query with a qrels
row is a question; graded qrels count as relevant when the score is > 0. Queries with no qrels row, or none
above 0, are skipped and counted, as are qrels rows that name a query or document the folder does not hold
(`Dataset.dropped`): BEIR's own scoring leaves such queries out too. A relevant row naming a document the corpus
lacks is a label lost: recall counts only the labels kept, where trec_eval on the same qrels counts every one, so
the share lost is reported with every run and a folder that lost most of its labels is refused
(memlab.lab.datasets.loaders).

Malformed input raises FixtureError naming the file, the line and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError, FixtureError
from memlab.lab.base.json_bounds import loads
from memlab.lab.datasets.model import Dataset, Question, UserHistory
from memlab.types import Event, Session

AUTHOR = "document"
START = datetime(2020, 1, 1, tzinfo=UTC)  # BEIR has no times: documents are dated one second apart from here
STEP = timedelta(seconds=1)
NO_QRELS = "queries without a qrels row"
NONE_RELEVANT = "queries without a relevant document (score > 0) in the corpus"
UNKNOWN_QUERY = "qrels rows naming a query not in queries.jsonl"
UNKNOWN_DOC = "qrels rows naming a document not in corpus.jsonl"  # relevant ones (score > 0): labels lost
UNKNOWN_DOC_NOT_RELEVANT = "qrels rows scored 0 naming a document not in corpus.jsonl"
EMPTY_DOC = "documents without title or text"


def load_beir(folder: str | Path, *, split: str = "test", limit: int | None = None,
              app_name: str = "beir") -> Dataset:  # fmt: skip
    """The folder's corpus as one user's memory and its judged queries as questions, in queries.jsonl order;
    `limit: N` keeps the first N questions."""
    folder = Path(folder)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"load_beir: limit must be a whole number >= 1 or None, got {limit!r}")
    if not folder.is_dir():
        raise FixtureError(f"{folder}: format beir reads a folder holding corpus.jsonl, queries.jsonl and "
                           f"qrels/{split}.tsv; give the folder as `path`")  # fmt: skip
    files = {"corpus": folder / "corpus.jsonl", "queries": folder / "queries.jsonl",
             "qrels": folder / "qrels" / f"{split}.tsv"}  # fmt: skip
    absent = [str(p.relative_to(folder)) for p in files.values() if not p.is_file()]
    if absent:
        raise FixtureError(f"{folder}: {', '.join(absent)} missing; the BEIR layout is corpus.jsonl, queries.jsonl "
                           f"and qrels/{split}.tsv (`split` picks another qrels file)")  # fmt: skip
    user = folder.resolve().name
    dropped: dict[str, list[str]] = {}
    sessions: list[Session] = []
    for n, (doc_id, record, line) in enumerate(_records(files["corpus"], ("_id",))):
        title, text = (_field(record, key, files["corpus"], line) for key in ("title", "text"))
        joined = "\n\n".join(part for part in (title.strip(), text.strip()) if part)
        if not joined:
            dropped.setdefault(EMPTY_DOC, []).append(doc_id)
            continue
        event = Event(id=doc_id, author=AUTHOR, timestamp=START + n * STEP, text=joined)
        sessions.append(Session(app_name=app_name, user_id=user, id=doc_id, events=[event]))
    if not sessions:
        raise FixtureError(f"{files['corpus']}: no documents; each line is {{\"_id\", \"title\", \"text\"}}")
    docs = {s.id for s in sessions}
    queries = {}
    for qid, record, line in _records(files["queries"], ("_id", "text")):
        queries[qid] = _field(record, "text", files["queries"], line).strip()
        if not queries[qid]:
            raise FixtureError(f"{files['queries']}:{line}: query {qid!r} has an empty `text`; give it one")
    relevant, given = _qrels(files["qrels"], queries, docs, dropped)
    asked_at = START + len(sessions) * STEP + timedelta(minutes=1)
    questions = []
    for qid, text in queries.items():
        if qid not in relevant:
            dropped.setdefault(NO_QRELS, []).append(qid)
        elif not relevant[qid]:
            dropped.setdefault(NONE_RELEVANT, []).append(qid)
        else:
            questions.append(Question(qid, app_name, user, text, tuple(relevant[qid]), asked_at=asked_at,
                                      qtype="query", evidence=tuple((d, d) for d in relevant[qid])))  # fmt: skip
    questions = questions[:limit] if limit is not None else questions
    history = UserHistory(app_name=app_name, user_id=user, sessions=sessions, source=str(folder),
                          description=f"BEIR corpus {user} ({len(sessions)} documents)",
                          replay=[s.id for s in sessions])  # fmt: skip
    return Dataset(name=user, users=[history], questions=questions, dropped=dropped, label_kinds=(UNKNOWN_DOC,),
                   labels_given=given)  # fmt: skip


def _records(path: Path, required: tuple[str, ...]) -> Iterator[tuple[str, dict[str, Any], int]]:
    """(`_id`, record, line number) of each non-blank line; a repeated `_id` is an error."""
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8") as f:
        for line, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                record = loads(raw, f"{path}:{line}")
            except json.JSONDecodeError as e:
                raise FixtureError(f"{path}:{line}: not valid JSON ({e.msg}); write one JSON object per line") from e
            if not isinstance(record, dict):
                raise FixtureError(f"{path}:{line}: expected a JSON object, got {type(record).__name__}")
            missing = [k for k in required if record.get(k) is None]
            if missing:
                raise FixtureError(f"{path}:{line}: {', '.join(f'`{k}`' for k in missing)} missing; each line needs "
                                   f"{', '.join(required)}")  # fmt: skip
            key = str(record["_id"]).strip()
            if not key:
                raise FixtureError(f"{path}:{line}: `_id` is empty; give every line its own id")
            if key in seen:
                raise FixtureError(f"{path}:{line}: `_id` {key!r} repeats line {seen[key]}; ids must be unique")
            seen[key] = line
            yield key, record, line


def _field(record: dict[str, Any], key: str, path: Path, line: int) -> str:
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FixtureError(f"{path}:{line}: `{key}` must be a string, got {type(value).__name__}")
    return value


def _qrels(path: Path, queries: dict[str, str], docs: set[str],
           dropped: dict[str, list[str]]) -> tuple[dict[str, list[str]], int]:  # fmt: skip
    """(query id -> its documents scored > 0 (an empty list: judged, none relevant), the relevant labels the qrels
    give the queries, kept or not); rows naming an unknown query or document are counted in `dropped`."""
    out: dict[str, list[str]] = {}
    given = 0
    with path.open(encoding="utf-8") as f:
        for line, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            cells = [c.strip() for c in raw.rstrip("\n").split("\t")]
            if len(cells) != 3:
                raise FixtureError(f"{path}:{line}: expected 3 tab-separated columns (query-id, corpus-id, score), "
                                   f"got {len(cells)}; separate them with tabs")  # fmt: skip
            qid, doc, score_text = cells
            try:
                score = float(score_text)
            except ValueError:
                if line == 1:
                    continue  # the header line (query-id, corpus-id, score)
                raise FixtureError(f"{path}:{line}: score {score_text!r} is not a number; write a whole number "
                                   "(graded: > 0 is relevant)") from None  # fmt: skip
            if qid not in queries:
                dropped.setdefault(UNKNOWN_QUERY, []).append(f"line {line}: {qid}")
                continue
            judged = out.setdefault(qid, [])
            if doc not in docs:
                kind = UNKNOWN_DOC if score > 0 else UNKNOWN_DOC_NOT_RELEVANT
                dropped.setdefault(kind, []).append(f"line {line}: {qid} -> {doc}")
                given += score > 0
                continue
            if score > 0 and doc not in judged:
                judged.append(doc)
                given += 1
    return out, given
