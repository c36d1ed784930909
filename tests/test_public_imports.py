"""The tests use memlab through its public faces, like the CLI and the notebooks: `memlab`, `memlab.lab`, the
`memlab.adk` services (the documented entry point of the `adk` extra), `memlab.models`, `memlab.table_store` (the
reads of a user's own table) and the CLI's `app` (for CliRunner), with
imported names from the module's `__all__`. Unit tests of internals are the exception, each listed in ALLOWED
with its reason, so what the tests reach past the public API stays visible and short."""

from __future__ import annotations

import ast

import memlab
import memlab.models
import memlab.table_store
from memlab import lab
from tests.conftest import ROOT
from tests.test_cli import _memlab_imports

TESTS = ROOT / "tests"


def _static_all(path) -> set[str]:
    """A module's `__all__`, read from its source (memlab.adk imports the optional ADK when imported)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"{path} has no __all__")


PUBLIC: dict[str, set[str]] = {
    "memlab": set(memlab.__all__) | {"lab"},
    "memlab.lab": set(lab.__all__),
    "memlab.lab.bench": set(lab.bench.__all__),
    "memlab.lab.probes": set(lab.probes.__all__),
    "memlab.adk": _static_all(ROOT / "memlab" / "adk.py"),
    "memlab.cli": {"app"},
    "memlab.models": set(memlab.models.__all__),
    "memlab.table_store": set(memlab.table_store.__all__),
}

# (test file, private module) -> why that test may import it. One line each; remove an entry once it is unused.
ALLOWED: dict[tuple[str, str], str] = {
    ("tests/lab/test_input_bounds_family.py", "memlab.lab.probes.input_bounds"): "the input_bounds family run on its "
    "own (the lead registers it with `memlab check reliability`)",
    ("tests/lab/test_expansion_bounds.py", "memlab.lab.expansion"): "the config's size count and its limit, checked "
    "against every suite and against what the sweeps build",
    ("tests/lab/test_expansion_bounds.py", "memlab.lab.experiment"): "systems_for: what the sweeps build on a data "
    "set, which the count must bound",
    ("tests/lab/test_llama_smoke.py", "memlab.lab.llama_server"): "unit test of the opt-in llama.cpp smoke run's pure "
    "parts (its server command, log and metrics reading): the run itself needs a real server",
    ("tests/lab/test_llama_smoke.py", "memlab.lab.llama_smoke"): "the same smoke run's cache-served check, eval "
    "config and report",
    ("tests/lab/test_answer_metrics.py", "memlab.lab.answer_metrics"): "unit test of the pure token F1 and "
    "abstention detection",
    ("tests/lab/test_answer_metrics.py", "memlab.lab.answering"): "unit test of the reader and judge prompts and "
    "the judge's verdict parsing",
    ("tests/lab/test_prompt_fences.py", "memlab.lab.probes.prompt_fences"): "runs the prompt_fences reliability "
    "family (registered by the lead) and reads its builders and grading cases",
    ("tests/lab/test_prompt_fences.py", "memlab.models.fence"): "unit test of the prompts' fence and escaping helper",
    ("tests/lab/test_label_validation.py", "memlab.lab.label_validation"): "unit test of the labels sweep's pure "
    "analysis (capture, tau, leave-one-out) on hand-made run frames",
    ("tests/lab/test_label_validation.py", "memlab.lab.dataset"): "builds the hand-made questions the analysis reads",
    ("tests/lab/test_label_validation.py", "memlab.lab.runs"): "the run and session frame columns of hand-made runs",
    ("tests/lab/test_judged_store.py", "memlab.storage"): "spies on the stored-units SQL read to prove a judged set "
    "reads only the queried users' rows",
    ("tests/events/test_secrets.py", "memlab.safety"): "unit test of the secret detectors' checksums, gates, "
    "fail-closed scanning and the memo of texts scanned clean",
    ("tests/events/test_secrets.py", "memlab.lab.probes.secret_rates"): "secret_filter_rates on fixtures/secrets and "
    "on a given folder, from the secrets family's module",
    ("tests/events/test_secrets.py", "memlab.embedding.cache"): "the embedding cache's text_key, which the memo of "
    "texts scanned clean must agree with",
    ("tests/embedding/test_embedding.py", "memlab.embedding.cache"): "unit test of the transient (never cached) "
    "query vectors the fact sweep warms in one batch",
    ("tests/events/test_units.py", "memlab.events.units"): "unit test of event units and chunk windowing, internals",
    ("tests/events/test_retrieval_modes.py", "memlab.events.units"): "builds internal units to render",
    ("tests/events/test_timewords.py", "memlab.events.timewords"): "unit test of the pure time-phrase resolver",
    ("tests/facts/test_staleness.py", "memlab.facts.staleness"): "unit test of the pure serving rule (stale, hidden)",
    ("tests/events/test_retrieval_modes.py", "memlab.events.renderings"): "unit test of the pure renderings",
    ("tests/events/test_retrieval_modes.py", "memlab.events.fusion"): "unit test of rank fusion and time re-ranking",
    ("tests/facts/test_rule_gates.py", "memlab.facts.extractors"): "unit test of the rule extractor's gates "
    "against its rules, with the gates on and off",
    ("tests/facts/test_rule_gates.py", "memlab.safety.pattern_gates"): "unit test of the pure gate derivation and "
    "the case folding the gates search",
    ("tests/events/test_pattern_scan.py", "memlab.safety.pattern_gates"): "unit test of the pure lead derivation "
    "and of scan against finditer",
    ("tests/events/test_pattern_scan.py", "memlab.safety"): "scans every secret detector's pattern, internals",
    ("tests/events/test_erasure.py", "memlab.safety"): "checks that erasure drops the memo of texts scanned clean",
    ("tests/lab/test_ingest_bench.py", "memlab.safety"): "counts the secret scans of each measured round",
    ("tests/lab/test_scoring.py", "memlab.lab.scoring"): "unit test of the pure size buckets against pandas.cut",
    ("tests/lab/test_scoring.py", "memlab.lab.answerability"): "the answerability curve's cut-off shortcut against "
    "every cut-off scored alone",
    ("tests/lab/test_scoring.py", "memlab.lab.cutoff_analysis"): "the cut-off grid's shortcut (kept_hits) against "
    "every cut-off scored alone",
    ("tests/lab/test_rerank_order.py", "memlab.lab.rerank"): "unit test of the re-rank stage's pure ordering, "
    "fallback and option checks with an in-test re-ranker",
    ("tests/lab/test_model_safety.py", "memlab.lab.probes.model_safety"): "the model_safety reliability family, "
    "run directly until it is registered with the others",
    ("tests/models/test_model_cache_erasure.py", "memlab.lab.rerank"): "the re-rank stage's search on a real memory "
    "records the hits' refs, so erasing them deletes the cached scores",
    ("tests/lab/test_sweeps.py", "memlab.lab.sweeps.retrieval"): "unit test of the retrieval grid's system names "
    "and their parse back to search settings",
    ("tests/events/test_event_memory.py", "memlab.events.batches"): "unit test of batch_sessions, the pure "
    "batching behind add_sessions",
    ("tests/events/test_event_memory.py", "memlab.lab.synth.vectors"): "background rows (internal Unit rows for "
    "bulk_load) to build the filtered-search trap",
    ("tests/storage/test_store.py", "memlab.storage.store"): "unit test of the pgvector version check of open_store",
    ("tests/storage/test_units_sql.py", "memlab.storage.units"): "unit test of the unit table's SQL helpers",
    ("tests/storage/test_units_sql.py", "memlab.storage.unit_housekeeping"): "unit test of the deletes' SQL",
    ("tests/storage/test_units_sql.py", "memlab.storage.schema"): "checks UNITS_TABLE SQL lives only in storage/units",
    ("tests/storage/test_units_sql.py", "memlab.events.units"): "builds internal Unit rows for the SQL helpers",
    ("tests/test_erasure_writes.py", "memlab.events.units"): "bulk_load's rows hold Unit, which has no public name",
    ("tests/test_erasure_writes.py", "memlab.lab.probes.erasure_writes"): "the gate that holds a bulk_load between "
    "batches (GatedRows), from the family not yet registered in memlab.lab.probes",
    ("tests/storage/test_scratch_owner.py", "memlab.storage.scratch"): "names scratch databases of made-up owners "
    "(dead, rebooted, another host) to check which a start drops",
    ("tests/lab/test_erasure_writes_family.py", "memlab.lab.probes.erasure_writes"): "the family, not yet "
    "registered in memlab.lab.probes",
    ("tests/lab/test_scratch_leftovers_family.py", "memlab.lab.probes.scratch_leftovers"): "the family, not yet "
    "registered in memlab.lab.probes",
    ("tests/facts/test_decide.py", "memlab.facts.decide"): "unit test of resolve, the order-free core of decide",
    ("tests/lab/test_metrics.py", "memlab.lab.metrics"): "unit test of the metric helpers behind lab.score",
    ("tests/lab/test_synth_gold.py", "memlab.facts.memory"): "checks gold subjects against fact memory's SUBJECT form",
    ("tests/lab/test_synth_gold.py", "memlab.lab.synth"): "round-trips gold candidates through the synth JSON form",
    ("tests/lab/test_synth_gold.py", "memlab.lab.synth.generator"): "checks gold candidates against the FACTS specs",
    ("tests/lab/test_synth_gold.py", "memlab.lab.systems"): "builds the labelled extractor as the workbench does",
    ("tests/models/test_models_config.py", "memlab.lab.systems"): "make_extractor picks the LLM extractor by "
    "llm.model_ref (a whole fact run per case would cost an ingest)",
    ("tests/lab/test_synth.py", "memlab.lab.synth"): "unit test of the synth generator's labels and text I/O",
    ("tests/lab/test_event_identity.py", "memlab.lab.synth"): "the synth text helpers (transcript, explained "
    "questions) on event ids repeated across sessions",
    ("tests/lab/test_synth.py", "memlab.lab.synth.banks"): "checks the synth phrase banks against the generated text",
    ("tests/lab/test_synth.py", "memlab.lab.synth.generator"): "checks synth fact and topic specs against the output",
    ("tests/lab/test_synth.py", "memlab.lab.synth.io"): "hashes the synth JSON form to prove determinism",
    ("tests/lab/test_bench_corpora.py", "memlab.lab.bench"): "unit test of the corpus builders (calibration curve, "
    "cache files)",
    ("tests/lab/test_bench_search.py", "memlab.lab.bench"): "builds the bench table layout and clears it",
    ("tests/lab/test_bench_search.py", "memlab.storage"): "checks which per-tenant indexes the bench leaves",
    ("tests/lab/test_bench_bulk.py", "memlab.lab.bench.bulk"): "writes the bench's own rows and layer",
    ("tests/lab/test_bench_bulk.py", "memlab.storage"): "reads index names and row counts of the bench layer",
    ("tests/lab/test_gate_direction_family.py", "memlab.lab.probes.gate_direction"): "the gate_direction reliability "
    "family, run directly until it is registered with the others",
    ("tests/lab/test_roles.py", "memlab.lab.folder"): "writes a run's labels the way a run does, to build a run "
    "folder by hand",
    ("tests/lab/test_headline_cutoff.py", "memlab.lab.folder"): "writes a run's labels the way a run does, to "
    "score hand-built runs",
    ("tests/lab/test_headline_cutoff.py", "memlab.lab.scoring"): "cuts hand-built runs at a distance as the sweep does",
    ("tests/lab/test_headline_cutoff.py", "memlab.lab.sweeps.cutoff"): "names the cut systems of the cut-off grid",
    ("tests/lab/test_headline_cutoff.py", "memlab.lab.uncertainty"): "unit test of the pure tie and sample-size rules",
    ("tests/lab/test_progress.py", "memlab.lab.progress"): "unit test of run_progress, the quiet/loud switch",
    ("tests/storage/test_scaling_sql.py", "memlab.storage"): "runs docs/scaling.md's SQL beside the unit table's",
    ("tests/storage/test_scaling_sql.py", "memlab.storage.schema"): "creates a partitioned copy of the unit table",
    ("tests/storage/test_scaling_sql.py", "memlab.events.units"): "writes internal Unit rows into the partitions",
    ("tests/test_erasure_on_disk.py", "memlab.storage.disk_erasure"): "the list of tables erasure vacuums; purge_wal",
    ("tests/test_leaks.py", "memlab.safety.redact"): "unit test of the one redactor behind errors, logs and run "
    "folders",
    ("tests/lab/test_leaks_run_folder.py", "memlab.lab.viewer"): "unit test of the script-data escaping",
    ("tests/lab/test_report_html.py", "memlab.lab.probes.leaks"): "the hostile run whose page the browser opens",
    ("tests/test_notebooks.py", "memlab.lab.notebooks"): "runs notebooks with the runner's kernel, parameter helpers",
    ("tests/events/test_secret_kinds.py", "memlab.safety"): "unit test of the decoded-shape detectors "
    "(secret_shapes) behind the secret filter",
    ("tests/lab/test_bench_lexical.py", "memlab.lab.bench"): "runs the lexical bench section on small users",
    ("tests/lab/test_bench_lexical.py", "memlab.lab.bench.markdown"): "renders the lexical section of bench.md",
    ("tests/lab/test_ingest_bench.py", "memlab.lab.bench.markdown"): "renders the ingest goal lines of bench.md",
    ("tests/lab/test_bench_lexical.py", "memlab.lab.probes.lexical"): "the probe's cheap texts and vectors",
    ("tests/lab/test_leaks_run_folder.py", "memlab.lab.redacted"): "unit test of the run folder's redacting writers",
    ("tests/lab/test_run_folder_safety.py", "memlab.lab.outputs"): "unit test of the folder claim and its marker",
    ("tests/lab/test_split_secrets_probe.py", "memlab.events.ingest"): "switches the session scan off to show the "
    "family sees what it guards",
    ("tests/lab/test_split_secrets_probe.py", "memlab.facts.memory"): "the same switch in fact memory",
    ("tests/storage/test_lexical_scaling.py", "memlab.lab.probes"): "the lexical probe's plan-row counter",
    ("tests/storage/test_lexical_scaling.py", "memlab.storage"): "EXPLAINs the lexical statement itself",
    ("tests/storage/test_lexical_side_table.py", "memlab.lab.probes"): "the lexical probe's texts and plan counter",
    ("tests/storage/test_lexical_side_table.py", "memlab.storage"): "compares the lexical statement with a reference "
    "and inspects its side table",
    ("tests/events/test_split_secret_tails.py", "memlab.safety.split_secrets"): "unit test of the pure session "
    "scan on key bodies whose last line looks like a word",
    ("tests/test_erasure_races.py", "memlab.events.filters"): "the skip reason an erased unit is reported under",
    ("tests/lab/test_filtered.py", "memlab.lab.sweeps.filtered"): "runs the filtered sweep's measurement on a tiny "
    "grid",
    ("tests/lab/test_index_health.py", "memlab.lab.live.index_health"): "index health of a live store, before the "
    "probe exports it",
    ("tests/lab/test_alerts.py", "memlab.lab.live.alerts"): "unit test of the pure alert grammar and noise rule",
    ("tests/lab/test_alerts_textfile.py", "memlab.lab.live.alerts"): "the alert results the textfile reports",
    ("tests/lab/test_alerts_textfile.py", "memlab.lab.live.textfile"): "unit test of the Prometheus textfile writer",
    ("tests/lab/test_alerts_folders.py", "memlab.lab.live.alerts"): "the noise rule on a scored folder's questions",
    ("tests/lab/test_alerts_folders.py", "memlab.lab.live.drift"): "unit test of the KS drift of two probe folders",
    ("tests/lab/test_run_folders_family.py", "memlab.lab.probes.run_folders"): "the run_folders reliability "
    "family, run directly before the lead registers it in memlab.lab.probes",
    ("tests/lab/test_alerts_folders.py", "memlab.lab.folder"): "writes a run's labels the way a run does, to score "
    "hand-built runs",
}


def non_public_imports(rel: str, source: str) -> list[tuple[str, str]]:
    """(module, problem) for each import in `source` of a memlab module or name outside PUBLIC."""
    problems = []
    for module, name in _memlab_imports(ast.parse(source, rel)):
        if module not in PUBLIC:
            what = f"{name} from " if name else ""
            problems.append((module, f"{rel} imports {what}the private module {module}"))
        elif name is not None and name not in PUBLIC[module]:
            problems.append((module, f"{rel} imports {name} from {module}, not in its __all__"))
    return problems


def _test_sources() -> dict[str, str]:
    return {path.relative_to(ROOT).as_posix(): path.read_text() for path in sorted(TESTS.rglob("*.py"))}


def test_the_check_catches_private_imports():
    source = (
        "import memlab\nimport memlab.lab\nimport memlab.storage.store\nfrom memlab import lab, Event, migrate\n"
        "from memlab.lab import score, metrics\nfrom memlab.events.units import Unit\n"
        "from memlab.cli import app, main\nfrom memlab.adk import EventMemoryService\n"
        "def f():\n    from memlab.lab.synth import generate\n"
    )
    assert [problem for _, problem in non_public_imports("t.py", source)] == [
        "t.py imports the private module memlab.storage.store",
        "t.py imports migrate from memlab, not in its __all__",
        "t.py imports metrics from memlab.lab, not in its __all__",
        "t.py imports Unit from the private module memlab.events.units",
        "t.py imports main from memlab.cli, not in its __all__",
        "t.py imports generate from the private module memlab.lab.synth",
    ]


def test_tests_import_only_public_names_or_allowed_internals():
    problems = [
        problem
        for rel, source in _test_sources().items()
        for module, problem in non_public_imports(rel, source)
        if (rel, module) not in ALLOWED
    ]
    assert not problems, "tests import memlab internals (use the public name, or add a reason to ALLOWED):\n" + (
        "\n".join(problems)
    )


def test_the_allowlist_has_no_stale_entries():
    needed = {(rel, module) for rel, source in _test_sources().items() for module, _ in non_public_imports(rel, source)}
    stale = sorted(set(ALLOWED) - needed)
    assert not stale, f"ALLOWED entries no test needs any more (remove them): {stale}"
    assert all(reason.strip() and "\n" not in reason for reason in ALLOWED.values()), "one line of reason each"
