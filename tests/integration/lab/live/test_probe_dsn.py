"""A probe given a DSN with an empty password (the form of the embedded server's own DSN) runs and writes its
folder, or is refused in one line: the redactor that every message and file passes never crashes on it."""

from __future__ import annotations

import json
import uuid

import psycopg
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app as cli
from tests.conftest import make_session


def test_a_dsn_with_an_empty_password_probes_without_a_traceback(store, embedder, tmp_path):
    app = f"dsn-{uuid.uuid4().hex[:8]}"
    memlab.EventMemory(store, embedder).add_session(make_session(app, "u1", "s0", ["I moved to Lyon last spring."]))
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"type": "question", "id": "q1", "app": app, "user": "u1",
                                  "text": "Which city do I live in?", "relevant": ["s0-e0"]}) + "\n")  # fmt: skip
    parts = psycopg.conninfo.conninfo_to_dict(store.dsn)
    dsn = f"postgresql://{parts.get('user', 'postgres')}:@/{parts.get('dbname', 'postgres')}?host={parts['host']}"
    result = CliRunner().invoke(cli, ["probe", "--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "run")])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 0, result.output  # the embedded server trusts its local socket
    assert lab.RunFolder(tmp_path / "run").manifest["status"] == "complete"
