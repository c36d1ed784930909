"""Systems are parsed once, when the config is: the config keeps them, and the run plans with those very objects
(no second parse that could disagree with the checks)."""

from __future__ import annotations

import memlab.lab.systems.kinds as kinds
from memlab import lab
from memlab.lab.experiment.run import plan_systems
from memlab.lab.systems.roles import MAIN, SWEEP

SYNTH = {"name": "s", "format": "synth", "users": 2, "max_events": 20}


def test_the_config_keeps_its_parsed_systems_and_the_run_plans_with_them(monkeypatch):
    config = lab.parse_config({"name": "p", "datasets": [SYNTH], "k": 5, "sweeps": ["models"],
                               "systems": [{"name": "hnsw", "strategy": "hnsw", "ef_search": 80},
                                           {"name": "chunks", "granularity": "chunk", "chunk_size": 3,
                                            "chunk_overlap": 1},
                                           {"name": "facts", "extractor": "rules"}]})  # fmt: skip
    hnsw, chunks, facts = config.systems
    assert isinstance(hnsw, kinds.EventSystem) and hnsw.settings.ef_search == 80 and hnsw.settings.strategy == "hnsw"
    assert (chunks.granularity, chunks.chunk_size, chunks.chunk_overlap) == ("chunk", 3, 1)
    assert isinstance(facts, kinds.FactSystem) and facts.extractor == "rules"

    def parsed_again(*args, **kwargs):
        raise AssertionError("a system was parsed a second time")

    monkeypatch.setattr(kinds, "system_from_config", parsed_again)
    data = lab.load_dataset(SYNTH)
    systems, roles = plan_systems(data, config, {"default": None})
    assert systems[:3] == config.systems and all(a is b for a, b in zip(systems, config.systems, strict=False))
    assert [roles[s.name].role for s in systems] == [MAIN, MAIN, MAIN, SWEEP]

