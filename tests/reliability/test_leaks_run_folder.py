"""A run folder holds no credential and its report.html survives hostile text.

One tiny run of `memlab.lab.reliability.probes.leaks.hostile_dataset` (credentials in a question, an answer, the
config's
description and LLM key; `<!--<script>` and friends in events, a question and an answer) through the public lab
functions; every file written is byte-searched. The page itself is opened in a browser by test_report_html.py."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from memlab.lab.reliability.probes import leaks_family
from memlab.lab.reliability.probes.leaks import (
    CREDENTIALS,
    HOSTILE,
    MARK,
    files_holding,
    hostile_run,
    page_data,
    script_data_problems,
)
from memlab.lab.report.viewer import script_json


@pytest.fixture(scope="module")
def run(tmp_path_factory, memlab_home, store):
    return hostile_run(tmp_path_factory.mktemp("leaks"))


@pytest.mark.parametrize("text", [*HOSTILE, "<!--<script>/*", "</script\t>", "<!-- <script> --></script>", "\u2028"])
def test_script_json_is_inert_in_a_script_element(text):
    data = {"text": text, text: [text]}
    encoded = script_json(data)
    assert not set(encoded) & set("<>&\u2028\u2029"), encoded
    assert json.loads(encoded) == data


def test_no_file_of_the_run_folder_holds_a_credential(run):
    files = [p for p in run.rglob("*") if p.is_file()]
    assert {"manifest.json", "report.md", "report.html", "scores.csv"} <= {p.name for p in files}
    assert any(p.parent.name == "labels" for p in files) and any(p.parent.name == "runs" for p in files)
    assert files_holding(run, MARK) == []


def test_a_credential_is_cut_from_its_question_and_answer_not_the_rest(run):
    questions = pd.read_parquet(run / "labels" / "hostile.questions.parquet").set_index("id")
    question, answer = questions.loc["q-credential", "text"], questions.loc["q-credential", "answer"]
    assert MARK not in question and "wifi" in question, question
    assert MARK not in answer and answer.startswith("The file is called notes"), answer
    assert questions.loc["q-hostile", "text"] == "What is my notes file called, <!--<script> or </script>?"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["given"]["k"] == 5 and manifest["config"]["given"]["llm"]["model"] == "m"


def test_report_html_embeds_hostile_text_escaped_and_intact(run):
    html = (run / "report.html").read_text(encoding="utf-8")
    assert script_data_problems(html) == []
    data = page_data(html)
    texts = " ".join(data["texts"]["hostile"].values()) + " ".join(q["text"] for q in data["questions"])
    assert all(h in texts for h in HOSTILE), "every hostile string reaches the page as it was written"
    assert {q["id"] for q in data["questions"]} == {"q-credential", "q-hostile"}
    assert CREDENTIALS["question"] not in html


def test_the_leaks_family_finds_nothing(tmp_path, scratch_store, embedder):
    family = leaks_family(scratch_store, embedder, tmp_path)
    assert family.failures() == [], family.found
    assert family.figures["files_checked"] >= 8 and family.figures["error_paths_checked"] >= 12
    assert family.figures["hostile_texts_shown"] == len(HOSTILE)


def _corpus() -> tuple[list[str], list[str]]:
    import yaml

    from tests.conftest import ROOT

    folder = ROOT / "fixtures" / "secrets"
    credentials = [c["text"] for c in yaml.safe_load((folder / "credentials.yaml").read_text())["credentials"]]
    ordinary = [o["text"] for o in yaml.safe_load((folder / "ordinary.yaml").read_text())["ordinary"]]
    return credentials, ordinary


def test_every_credential_the_filter_knows_leaves_a_run_folder_cell_clean():
    """Each credential of fixtures/secrets as a question, an answer and an id: after the run-folder redactor no
    cell trips the secret filter, batched scanning agrees with scanning each text alone, and ordinary technical
    text the filter passes is kept exactly."""
    import memlab
    from memlab.lab.base.redacted import clean_frame, clean_str

    credentials, ordinary = _corpus()
    caught = [c for c in credentials if memlab.find_secrets(c)]
    assert len(caught) >= 0.8 * len(credentials)
    texts = caught + ordinary
    frame = pd.DataFrame({"text": texts, "answer": texts[::-1], "ids": [[t.replace(" ", "_")] for t in texts]})
    out = clean_frame(frame)
    for column in ("text", "answer"):
        flagged = [v for v in out[column] if memlab.find_secrets(v)]
        assert flagged == [], flagged[:3]
    assert [v for ids in out["ids"] for v in ids if memlab.find_secrets(v)] == []
    assert list(out["text"]) == [clean_str(t) for t in texts], "a batch scan settles each text as it would alone"
    passed = [o for o in ordinary if not memlab.find_secrets(o)]
    assert [clean_str(o) for o in passed] == passed, "ordinary text is not touched"
