"""`memlab check reliability` end to end through the CLI (every must-be-zero figure is 0, the secret filter meets its
goals), and the verdict: a failing figure makes the command exit 1. The CLI run is the smoke size of the families
that have no test file of their own (`--family`); the families with a test file (folders, input_checks, races,
lexical, leaks, split_secrets, erasure_disk) each run in their own test file through the same probe code, and the
ci-size work of the big families by tests/reliability/test_isolation.py, test_concurrency.py, test_faults.py and
test_erasure*.py, so make test does not do any of it twice; `make reliability` runs every family at ci size."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from tests.conftest import ROOT

MUST_BE_ZERO = [
    "isolation.leaks",
    "concurrency.duplicates",
    "concurrency.lost_writes",
    "concurrency.two_current_values",
    "concurrency.confidence_not_once_per_session",
    "concurrency.setting_leaks",
    "concurrency.late_snapshot_chunks_rolled_back",
    "faults.half_written_sessions",
    "faults.lost_writes",
    "faults.extra_units",
    "erasure.table_traces",
    "erasure.event_cache_traces",
    "erasure.kept_user_lost",
    "bad_inputs.other_endings",
    "bad_inputs.poisoned_users",
]
SECOND_PROBE_ZERO = [  # the second hostile probe's classes (memlab/lab/reliability/probes/), each with its own test
                       # file
    "folders.user_files_lost",
    "folders.silent_collisions",
    "folders.escaped_writes",
    "folders.unbounded_configs",
    "input_checks.other_endings",
    "input_checks.stored_after_refusal",
    "input_checks.poisoned_users",
    "races.resurrected_units",
    "races.resurrected_facts",
    "races.boost_order_violations",
    "lexical.quadratic_plans",
    "leaks.secrets_in_run_folder",
    "leaks.secrets_in_errors",
    "leaks.unescaped_script_data",
    "split_secrets.secret_fragments_stored",
    "erasure_disk.marker_files_after_full",
    "erasure_disk.marker_in_wal_after_purge",
]
THIRD_PROBE_ZERO = [  # the third hostile probe's classes, each with its own test file
    "gate_direction.wrong_verdicts",
    "gate_direction.guessed_directions",
    "gate_direction.contradicting_cutoff_advice",
    "prompt_fences.unfenced_untrusted_texts",
    "prompt_fences.forged_fields_parsed",
    "prompt_fences.misgraded_abstentions",
    "run_folders.unlabelled_memories_in_folder",
    "run_folders.mislabelled_plans",
    "run_folders.silent_lost_labels",
    "run_folders.stale_textfiles_after_failure",
    "run_folders.redactor_crashes",
    "run_folders.ids_redacted",
    "model_safety.deadline_overruns",
    "model_safety.unbounded_bodies",
    "model_safety.credentials_to_other_origins",
    "model_safety.unusable_replies_cached",
    "model_safety.replies_of_another_model_served",
    "model_safety.replies_cached_after_erasure",
    "model_safety.vectors_of_another_model_served",
    "model_safety.vectors_cached_after_erasure",
    "erasure_writes.units_after_erasure",
    "erasure_writes.bulk_guard_bypasses",
    "erasure_writes.secrets_in_query_log",
    "scratch_leftovers.dead_scratch_kept",
    "scratch_leftovers.live_scratch_dropped",
    "scratch_leftovers.sigterm_scratch_left",
    "input_bounds.silently_dropped_labels",
    "input_bounds.order_dependent_verdicts",
    "input_bounds.unbounded_expansions",
    "input_bounds.tracebacks",
]


FIRST_PROBE = ["isolation", "concurrency", "faults", "erasure", "secrets", "bad_inputs"]
# first-probe families whose ci-size work runs in a test file of its own, through the same probe code: the CLI test
# leaves them out rather than run a smaller copy of the same work
OWN_FILE = {"isolation": "test_isolation.py", "concurrency": "test_concurrency.py"}
CLI_FAMILIES = [name for name in FIRST_PROBE if name not in OWN_FILE]


def test_every_family_is_run_by_the_cli_test_or_by_a_test_file_of_its_own():
    """The CLI test runs CLI_FAMILIES, OWN_FILE names the files of the rest of FIRST_PROBE; each other family's probe
    function is called by a test file."""
    families = {key.split(".")[0] for key in SECOND_PROBE_ZERO + THIRD_PROBE_ZERO}
    assert set(FIRST_PROBE) | families == set(lab.reliability.RELIABILITY_FAMILIES)
    assert all((ROOT / "tests" / "reliability" / name).is_file() for name in OWN_FILE.values())
    sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py") if p.name != "test_reliability.py")
    probes = {"input_checks": "inputs"}
    for name in families:
        assert f"{probes.get(name, name)}_family(" in sources, f"no test file runs the {name} family"


def test_check_reliability_writes_a_report_with_every_must_be_zero_figure_zero(tmp_path, store):
    chosen = [arg for name in CLI_FAMILIES for arg in ("--family", name)]
    result = CliRunner().invoke(app, ["check", "reliability", "--size", "smoke", "--out", str(tmp_path), *chosen])
    assert result.exit_code == 0, result.output
    [folder] = [p for p in tmp_path.iterdir() if p.is_dir()]
    data = json.loads((folder / "reliability.json").read_text())
    assert data["ok"] and not data["failures"] and data["size"] == "smoke"
    assert list(data["families"]) == CLI_FAMILIES
    assert {k for k in MUST_BE_ZERO if k.split(".")[0] in CLI_FAMILIES} <= set(data["must_be_zero"])
    assert all(value == 0 for value in data["must_be_zero"].values()), data["must_be_zero"]
    assert data["goals"]["secrets.held_out_caught"]["value"] >= 0.95
    assert data["goals"]["secrets.ordinary_flagged"]["value"] <= 0.10
    fam = {name: f["figures"] for name, f in data["families"].items()}
    # smoke: a kill may land after the small ingest finished (noted: the writer saw no error, the server still died
    # and restarted); every kill is recovered either way. tests/reliability/test_faults.py asserts both kills seen at
    # ci.
    landed_late = sum("finished before the kill" in note for note in data["families"]["faults"]["notes"])
    assert fam["faults"]["recovered"] == 2 and fam["faults"]["kills"] + landed_late == 2
    assert fam["faults"]["embedder_failures"] >= 2
    assert fam["erasure"]["cases"] == 3 and fam["erasure"]["tables_scanned"] >= 5
    ended = {row["input"]: row["ended"] for row in fam["bad_inputs"]["table"]}
    assert ended["NUL character in the text"] == ended["year-9999 timestamp (UTC)"] == "memlab error"
    assert ended["duplicate event ids in one session"] == "stored + counted skip"
    report = (folder / "reliability.md").read_text()
    assert report.startswith(f"# memlab reliability: {data['run_id']}") and "**PASS**" in report
    assert "| faults | lost_writes | 0 | 0 |" in report and "Only these families ran (--family)" in report
    assert "## Bad inputs: how each ended" in report
    assert data["seconds"] > 0, "the run records how long it took (speed is the bench's business, not a test's)"


def test_a_figure_that_is_not_zero_fails_the_command(tmp_path, monkeypatch):
    family = {"figures": {"leaks": 1, "cases": 3}, "must_be_zero": ["leaks"], "goals": {}, "found": ["leaks: x"],
              "notes": [], "known_issues": [], "seconds": 1.0}  # fmt: skip
    failing = {"run_id": "r", "size": "ci", "seconds": 1.0, "memlab_version": "0", "ok": False,
               "failures": ["isolation.leaks = 1 (must be 0)"], "must_be_zero": {"isolation.leaks": 1}, "goals": {},
               "families": {"isolation": family}, "folder": str(tmp_path)}  # fmt: skip
    monkeypatch.setattr(lab.reliability, "run_reliability", lambda *a, **k: failing)
    result = CliRunner().invoke(app, ["check", "reliability", "--out", str(tmp_path)])
    assert result.exit_code == 1 and "isolation.leaks = 1" in result.output
    markdown = lab.reliability.reliability_markdown(failing)
    assert "**FAIL**: isolation.leaks = 1 (must be 0)" in markdown and "- isolation: leaks: x" in markdown
    assert CliRunner().invoke(app, ["check", "reliability", "--size", "huge"]).exit_code == 2
    unknown = CliRunner().invoke(app, ["check", "reliability", "--family", "lekas", "--out", str(tmp_path / "u")])
    assert unknown.exit_code == 2 and "leaks" in unknown.output and not (tmp_path / "u").exists()
    assert set(lab.reliability.RELIABILITY_SIZES) == {"smoke", "ci", "full"}


SHARED_FIXTURES = {"own_home", "own_store", "memlab_home", "store", "scratch_store", "embedder"}  # tests/conftest.py


def test_the_tests_hold_no_copy_of_a_probe_helper_or_a_shared_fixture():
    """The reliability checks live once, in memlab.lab.reliability.probes: a test calls the probe's family or helper
    by its name (the tripwire, the private server and its postmaster pid, the writer process, the look-alike ids,
    the gated embedder, the trace scans), never a copy of its own; a fixture more than one module needs is in
    tests/conftest.py. So `memlab check reliability` and pytest run the same code. The helpers are the probes'
    face and every name a test imports from a probe module."""
    sources = {path: path.read_text() for path in sorted((ROOT / "tests").rglob("*.py"))}
    probe_names = {name.lstrip("_") for name in lab.reliability.probes.__all__} | {
        alias.name.lstrip("_") for source in sources.values() for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memlab.lab.reliability.probes")
        for alias in node.names}  # fmt: skip
    assert {"postmaster_pid", "GatedEmbedder", "look_alikes", "concurrency_figures"} <= probe_names
    copies = []
    for path, source in sources.items():
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name.lstrip("_") in probe_names:
                copies.append(f"{rel}:{node.lineno} defines {node.name}, a helper of memlab.lab.reliability.probes")
            if isinstance(node, ast.FunctionDef) and node.name in SHARED_FIXTURES and rel != "tests/conftest.py":
                copies.append(f"{rel}:{node.lineno} defines the fixture {node.name} of tests/conftest.py again")
        if "postmaster.pid" in source and path != Path(__file__):
            copies.append(f"{rel} reads postmaster.pid itself (use memlab.lab.reliability.probes.postmaster_pid)")
    assert not copies, "\n".join(copies)
