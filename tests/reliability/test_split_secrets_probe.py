"""The reliability family `split_secrets`: its must-be-zero figures are zero on memlab, and it sees
the hole when the session-wide scan is switched off."""

from __future__ import annotations

from memlab.lab.reliability.probes import split_secrets_family


def test_the_split_secrets_family_finds_nothing_stored(scratch_store, embedder, tmp_path):
    family = split_secrets_family(scratch_store, embedder, tmp_path)
    assert family.failures() == [], family.found
    assert all(family.figures[name] == 0 for name in family.must_be_zero)
    assert family.figures["key_types"] >= 8 and family.figures["shapes"] >= 6
    assert family.figures["sessions"] >= 30 and family.figures["fragments_searched"] > 300
    assert family.figures["ingests"] == 3 * family.figures["sessions"] + 9


def test_the_family_sees_a_split_key_when_the_session_scan_is_off(scratch_store, embedder, tmp_path, monkeypatch):
    """Without the session-wide scan the family reports stored fragments."""
    import memlab.events.ingest as event_memory
    import memlab.facts.memory as fact_memory

    monkeypatch.setattr(event_memory, "split_secret_events", lambda texts: set())
    monkeypatch.setattr(fact_memory, "split_secret_events", lambda texts: set())
    family = split_secrets_family(scratch_store, embedder, tmp_path, limit=4)
    assert family.figures["sessions"] < 30, "four split keys and the answers: a quick look"
    assert family.figures["secret_fragments_stored"] > 0
    assert family.figures["split_events_not_counted"] > 0
