"""The `stores:` section of a config and the table systems and data sets that name a store: every mistake is one
ConfigError naming the entry and the fix, before any database is opened (no server here)."""

from __future__ import annotations

import copy

import pytest

from memlab.errors import ConfigError
from memlab.lab.config.parse import parse_config
from memlab.lab.config.stores import only_store, store_specs
from memlab.lab.sweeps.base import SweepContext
from memlab.lab.sweeps.table import TableSweep
from memlab.lab.systems.table import TableSystem

DSN = "postgresql://reader:Secret-pw-9@db.example:5432/agent"
BASE = {
    "name": "t",
    "stores": [{"name": "agent", "dsn_env": "TEST_AGENT_DSN", "layout": "agent-memory", "app": "bot"}],
    "datasets": [{"name": "q", "format": "memlab", "path": "questions.jsonl", "store": "agent"}],
    "systems": [{"name": "hnsw", "store": "agent", "strategy": "hnsw", "ef_search": 40},
                {"name": "ivf", "store": "agent", "strategy": "ivfflat", "probes": 4, "iterative_scan": "off"}],
}  # fmt: skip


@pytest.fixture(autouse=True)
def dsn(monkeypatch):
    monkeypatch.setenv("TEST_AGENT_DSN", DSN)


def parsed(**changes):
    raw = copy.deepcopy(BASE)
    for path, value in changes.items():
        node = raw
        *head, last = path.split("__")
        for part in head:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if value is ...:
            del node[last]
        else:
            node[last] = value
    return parse_config(raw, source="exp.yaml")


def refused(**changes) -> str:
    with pytest.raises(ConfigError) as caught:
        parsed(**changes)
    return str(caught.value)


def test_a_store_is_read_with_its_preset_and_the_dsn_from_its_variable():
    config = parsed(stores__0__columns={"session": None}, stores__0__limits={"max_qps": 5})
    spec = store_specs(config)["agent"]
    assert spec.dsn == DSN and spec.where == "dsn_env TEST_AGENT_DSN" and spec.app == "bot"
    assert spec.layout.table == "agent_memory" and spec.layout.columns.session is None
    assert spec.layout.columns.embedding == "embedding" and spec.limits.max_qps == 5
    assert "Secret-pw-9" not in repr(spec)
    assert config.resolved["stores"][0]["dsn_env"] == "TEST_AGENT_DSN"


def test_a_missing_variable_names_it_and_the_fix(monkeypatch):
    monkeypatch.delenv("TEST_AGENT_DSN")
    text = refused()
    assert "stores[0] ('agent'): `dsn_env` names TEST_AGENT_DSN, which is not set" in text and "export" in text


def test_dsn_and_dsn_env_are_one_or_the_other():
    assert "exactly one; got `dsn_env`, `dsn`" in refused(stores__0__dsn=DSN)
    assert "exactly one; got neither" in refused(stores__0__dsn_env=...)


def test_unknown_keys_bad_layouts_and_bad_limits_are_named():
    assert "unknown key(s) ['tabel'] (did you mean 'table'?)" in refused(stores__0__tabel="x")
    assert "a preset is given as `layout: NAME`" in refused(stores__0__preset="agent-memory")
    assert "layout 'agent-memroy' is not a preset (did you mean 'agent-memory'?)" in refused(
        stores__0__layout="agent-memroy")
    assert "columns.user = 'user_id; drop table x' is not a column" in refused(
        stores__0__columns={"user": "user_id; drop table x"})
    assert "unknown column field 'sesion' (did you mean 'session'?)" in refused(stores__0__columns={"sesion": None})
    assert "give `layout: PRESET`" in refused(stores__0__layout=...)
    assert "limits: unknown key(s) ['qps']" in refused(stores__0__limits={"qps": 1})
    assert "max_qps=0 is refused" in refused(stores__0__limits={"max_qps": 0})


def test_a_hand_mapped_table_needs_its_table_and_required_columns():
    config = parsed(stores__0__layout=..., stores__0__table="docs",
                    stores__0__columns={"user": "cmetadata->>'user'", "event_id": "id", "text": "document",
                                        "embedding": "embedding"})  # fmt: skip
    assert store_specs(config)["agent"].layout.columns.user == "cmetadata->>'user'"
    assert "columns event_id, text, embedding are required" in refused(
        stores__0__layout=..., stores__0__table="docs", stores__0__columns={"user": "u"})


def test_table_systems_check_their_own_settings():
    config = parsed()
    assert [type(s).__name__ for s in config.resolved["systems"]] == ["dict", "dict"]
    assert "strategy 'hnws' is unknown (did you mean 'hnsw'?)" in refused(systems__0__strategy="hnws")
    assert "ef_search=5000 is refused" in refused(systems__0__ef_search=5000)
    assert "unknown key(s) ['granularity']" in refused(systems__0__granularity="chunk")
    assert "distance 'dot' is unknown" in refused(systems__0__distance="dot")
    assert "k=0 is refused" in refused(systems__0__k=0)
    system = TableSystem("x", "agent", strategy="exact", k=5)
    assert system.reference().name == "faiss-exact-agent" and system.reference().store == "agent"


def test_every_store_a_system_or_data_set_names_must_exist_and_be_used():
    assert "system 'hnsw' names store 'agnet', which the config's stores: does not hold (did you mean 'agent'?)" in \
        refused(systems__0__store="agnet")  # fmt: skip
    assert "data set 'q' names store 'other'" in refused(datasets__0__store="other")
    text = refused(datasets__0__store=...)
    assert "system 'hnsw' searches store 'agent', but no data set asks it questions" in text
    extra = {"name": "spare", "dsn_env": "TEST_AGENT_DSN", "layout": "agent-memory"}
    assert "store(s) ['spare'] are named by no system" in refused(stores=[*BASE["stores"], extra])
    assert "'store' is read by format(s) memlab, judged, not beir" in refused(datasets__0__format="beir")


def test_a_store_whose_data_set_no_system_searches_gets_an_hnsw_and_an_exact_system():
    config = parsed(systems=...)
    assert [(s.name, s.store, s.strategy) for s in config.systems] == [("agent-hnsw", "agent", "hnsw"),
                                                                      ("agent-exact", "agent", "exact")]
    assert [s["name"] for s in only_store(config, "agent").resolved["systems"]] == ["agent-hnsw", "agent-exact"]
    own = parsed(systems=[{"name": "event"}], datasets=[*BASE["datasets"], {"name": "own", "format": "memlab",
                                                                             "path": "own.jsonl"}])  # fmt: skip
    assert [s.name for s in own.systems] == ["event", "agent-hnsw", "agent-exact"]
    assert [s.name for s in parsed().systems] == ["hnsw", "ivf"], "a store with systems of its own gets no others"


def test_sweeps_that_would_copy_the_table_are_refused_on_its_data_sets():
    text = refused(sweeps=["cutoff", "granularity"])
    assert "sweep(s) granularity would run on data set 'q', which reads the table of store 'agent'" in text
    assert "sweeps on a table: cutoff, table" in text
    parsed(sweeps=["cutoff", "table"], options={"table": {"ef_search": [10, 40], "iterative_scan": ["off"]}})
    assert "options.table: unknown key(s) ['ef']" in refused(sweeps=["table"], options={"table": {"ef": [1]}})
    text = refused(sweeps=["table"], options={"table": {"iterative_scan": ["on"]}})
    assert "options.table.iterative_scan[0] must be one of ['off', 'relaxed_order', 'strict_order'], got 'on'" in text


def test_only_store_keeps_one_store_its_data_sets_and_its_systems():
    raw = copy.deepcopy(BASE)
    raw["stores"].append({"name": "docs", "dsn": DSN, "layout": "agent-memory"})
    raw["datasets"].append({"name": "d", "format": "memlab", "path": "d.jsonl", "store": "docs"})
    raw["datasets"].append({"name": "own", "format": "memlab", "path": "own.jsonl"})
    raw["systems"] += [{"name": "docs-exact", "store": "docs", "strategy": "exact"}, {"name": "event"}]
    config = parse_config(raw, source="exp.yaml")
    narrowed = only_store(config, "docs")
    assert [d["name"] for d in narrowed.resolved["datasets"]] == ["d"]
    assert [s["name"] for s in narrowed.resolved["systems"]] == ["docs-exact"]
    assert [s["name"] for s in narrowed.resolved["stores"]] == ["docs"]
    assert len(config.resolved["datasets"]) == 3, "the config itself is unchanged"
    with pytest.raises(ConfigError, match=r"--store doc: exp.yaml has no store of that name \(did you mean 'docs'"):
        only_store(config, "doc")


def test_the_table_sweep_grids_one_index_walking_system_per_store_and_distance():
    systems = [TableSystem("exact", "agent", strategy="exact"), TableSystem("h40", "agent", strategy="hnsw"),
               TableSystem("h10", "agent", strategy="hnsw", ef_search=10),
               TableSystem("l2", "agent", strategy="exact", distance="l2")]  # fmt: skip
    sweep, options = TableSweep(), {"ef_search": [80, 10], "iterative_scan": ["off", "strict_order"]}
    grid = sweep.systems(None, options, SweepContext({"systems": []}, systems))
    assert [s.name for s in grid] == ["h40@ef10-off", "h40@ef80-off", "h40@ef10-strict_order", "h40@ef80-strict_order",
                                      "l2@ef10-off", "l2@ef80-off", "l2@ef10-strict_order", "l2@ef80-strict_order"]
    assert {(s.strategy, s.store) for s in grid} == {("hnsw", "agent")} and grid[4].distance == "l2"
    assert sweep.planned(options, {"systems": [{"name": n, "store": "agent"} for n in "abc"]}) == 3 * 4 + 2 * 3


def _documented_store_configs() -> list[dict]:
    """The store configs the how-to page on table stores shows (docs/howto/own-store.md includes them), in its
    order: a whole experiment on one table, then every other layout."""
    import yaml

    from tests.conftest import ROOT

    folder = ROOT / "docs" / "examples" / "own-store"
    return [yaml.safe_load((folder / name).read_text()) for name in ("table-store.yaml", "layouts.yaml")]


def test_the_documented_store_configs_parse_as_written(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENT_DSN", DSN)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "questions.jsonl").write_text("")
    full, others = _documented_store_configs()
    config = parse_config({"name": "docs", **full}, base_dirs=[tmp_path])
    assert [s.name for s in config.systems] == ["exact", "hnsw40"]
    stores = others["stores"]
    systems = [{"name": f"exact-{s['name']}", "store": s["name"], "strategy": "exact"} for s in stores]
    config = parse_config({"name": "docs", "stores": stores, "systems": systems,
                           "datasets": [{"name": f"q-{s['name']}", "format": "memlab", "path": "questions.jsonl",
                                         "store": s["name"]} for s in stores],
                           "sweeps": []}, base_dirs=[tmp_path])  # fmt: skip
    specs = store_specs(config)
    assert sorted(specs) == sorted(s["name"] for s in stores)
    assert {name: spec.layout.table for name, spec in specs.items()}["mine"] == "support.memories"
