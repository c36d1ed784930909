"""Erasure on disk: after both memories forget a user with `vacuum="full"` (and the WAL purge), no file of the
embedded server's data folder holds the user's text.

The probe runs its own embedded server (a temporary MEMLAB_HOME), because the byte search reads
the whole data folder and the WAL purge checkpoints the server. It plants unique markers in event memory (an
event body, a chunk, a long text stored out of line in TOAST, the full-text index) and fact memory (a fact's
value and quote, its observation), takes a checkpoint so every page is on disk, checks the markers are found
(so a zero means something), then forgets the user in both memories and searches again after each level."""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import memlab
from memlab.lab.reliability.probes.family import Family
from memlab.lab.reliability.probes.server import private_server
from memlab.storage.disk_erasure import purge_wal

CHUNK = 1 << 20


def files_holding(root: Path, needle: bytes) -> list[str]:
    """Paths (relative to `root`) of the regular files whose bytes contain `needle` (read in overlapping chunks)."""
    found = []
    for path in sorted(root.rglob("*")):
        try:
            if not path.is_file():
                continue
            with path.open("rb") as handle:
                tail = b""
                while block := handle.read(CHUNK):
                    if needle in tail + block:
                        found.append(str(path.relative_to(root)))
                        break
                    tail = block[-len(needle) :]
        except OSError:  # a file removed while the server runs (a recycled segment, a temporary file)
            continue
    return found


def outside_wal(files: list[str]) -> list[str]:
    return [f for f in files if not f.startswith("pg_wal")]


@contextmanager
def disk_server() -> Iterator[tuple[memlab.Store, Path]]:
    """A store on an embedded server of its own, and its data folder (what the byte search reads)."""
    with private_server("memlab-erasure-disk-") as (store, home):
        yield store, home / "pgdata"


class Planted:
    """One user's markers in both memories of a store: each text holds a unique marker."""

    def __init__(self, store: memlab.Store, embedder: memlab.Embedder, app: str) -> None:
        self.app, tag = app, uuid.uuid4().hex[:12]
        self.user = f"zquser{tag}9"
        self.marker = f"Zqmark{tag}7"  # capitalised so the rule extractor takes it for an employer's name
        self.needles = [self.marker[1:].encode(), self.user.encode()]  # the tail matches lower-cased lexemes too
        self.events = memlab.EventMemory(store, embedder, query_log=memlab.QueryLog(enabled=True))
        self.chunks = memlab.EventMemory(store, embedder, "chunk", chunk_size=2, chunk_overlap=1)
        self.facts = memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor())
        filler = " ".join(secrets.token_hex(4) for _ in range(700))  # incompressible: stored out of line (TOAST)
        start = datetime.now(UTC) - timedelta(days=1)
        texts = [f"I work at {self.marker} Corp.", f"Remember that the {self.marker} launch is on Monday.",
                 f"Build log {filler} {self.marker} done."]  # fmt: skip
        events = [memlab.Event(f"e{i}", "user", start + timedelta(minutes=i), t) for i, t in enumerate(texts)]
        self.session = memlab.Session(app, self.user, f"s-{tag}", events)
        self.keeper = f"keep-{tag}"
        keep = memlab.Session(app, self.keeper, "k1", [memlab.Event("k0", "user", start, "I live in Lyon.")])
        for session in (keep, self.session):
            self.events.add_session(session)
            self.chunks.add_session(session)
            self.facts.add_session(session)
        self.events.search(app, self.user, f"When is the {self.marker} launch?")  # the query log holds it too

    def forget(self, vacuum: bool | str) -> None:
        self.facts.forget_user(self.app, self.user, vacuum=False)
        self.events.forget_user(self.app, self.user, vacuum=vacuum)  # one vacuum covers every user table


def checkpoint(store: memlab.Store) -> None:
    with store.connection() as conn:
        conn.execute("CHECKPOINT")  # every dirty page written to its file


def recycle_ahead(store: memlab.Store, rows: int = 400_000) -> str:
    """Write tens of MB of other WAL and checkpoint twice, so the segments written before are recycled: renamed
    to names ahead of the current segment, bytes intact. Returns the current segment's name."""
    with store.connection() as conn:
        conn.execute(
            "CREATE TABLE erasure_disk_filler AS SELECT g, md5(g::text) || md5((g + 1)::text) AS t "
            "FROM generate_series(1, %s) AS g",
            [rows],
        )
        conn.execute("CHECKPOINT")
        conn.execute("DROP TABLE erasure_disk_filler")
        conn.execute("CHECKPOINT")
        return conn.execute("SELECT pg_walfile_name(pg_current_wal_lsn())").fetchone()[0]


def holders(pgdata: Path, needles: list[bytes]) -> list[str]:
    return sorted({f for n in needles for f in files_holding(pgdata, n)})


def erasure_disk_family(store: memlab.Store, embedder: memlab.Embedder, workdir: Path) -> Family:
    """Plant, forget with vacuum="full", purge the WAL, byte-search the data folder after each step.

    `store` is not used: the probe needs a data folder of its own (see the module docstring)."""
    family = Family("erasure_disk", must_be_zero=["marker_files_after_full", "marker_in_wal_after_purge",
                                                  "not_planted"])  # fmt: skip
    started = time.monotonic()
    for key in ("marker_files_after_full", "marker_in_wal_after_purge", "not_planted"):
        family.figures[key] = 0
    with disk_server() as (private, pgdata):
        planted = Planted(private, embedder, "erasure-disk")
        checkpoint(private)
        before = holders(pgdata, planted.needles)
        family.figures["files_holding_marker_before"] = len(before)
        if not outside_wal(before) or not planted.facts.rows(planted.app, planted.user):
            family.problem("not_planted", f"the markers were not found before the erasure: {before}")
        planted.forget(False)
        checkpoint(private)
        family.figures["files_after_plain_forget"] = len(outside_wal(holders(pgdata, planted.needles)))
        current = recycle_ahead(private)  # the marker's segment now waits, recycled, ahead of the current one
        planted.forget("full")
        checkpoint(private)
        after = holders(pgdata, planted.needles)
        family.figures["files_searched"] = sum(1 for p in pgdata.rglob("*") if p.is_file())
        for name in outside_wal(after):
            family.problem("marker_files_after_full", f"{name} still holds the marker after vacuum='full'")
        family.figures["wal_files_after_full"] = len(after) - len(outside_wal(after))
        family.figures["wal_files_ahead_after_full"] = sum(1 for f in after if f.startswith("pg_wal/")
                                                           and Path(f).name > current)  # fmt: skip
        try:
            family.figures["wal_purge_rounds"] = purge_wal(private).rounds
        except memlab.MemlabError as exc:  # counted, and the search below shows what it left
            family.problem("marker_in_wal_after_purge", f"purge_wal refused: {exc}")
        for name in holders(pgdata, planted.needles):
            family.problem("marker_in_wal_after_purge" if name.startswith("pg_wal") else "marker_files_after_full",
                           f"{name} still holds the marker after purge_wal")  # fmt: skip
    family.notes.append(
        "plain forget leaves the bytes in table and index files (expected: see the erasure levels "
        "in docs/explanation/erasure.md); vacuum='full' must leave none outside pg_wal, purge_wal none at all"
    )
    family.seconds = round(time.monotonic() - started, 2)
    return family
