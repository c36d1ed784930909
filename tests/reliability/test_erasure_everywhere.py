"""Erasure across both memories: a user with event memory, chunk memory and fact memory (facts, observations,
watermarks, the served fact lines ranked by the embedder) is forgotten with `EventMemory.forget_user` and
`FactMemory.forget_user`, in either order. Afterwards no table of the schema (every table pg_tables lists, so a
table added later cannot escape) and no entry of the embedding cache holds a trace of that user: ids, texts, fact
values, or the hash of any text embedded for them (searches' queries included). tests/integration/events/test_erasure.py
covers event memory alone.

The cases are the erasure family's of `memlab check reliability` (ErasureCase, in
memlab.lab.reliability.probes.erasure_traces): the tests run them and assert the family's figures."""

from __future__ import annotations

import pytest

from memlab.lab.reliability.probes.erasure_traces import ErasureCase, erasure_figures

ORDERS = ["events-then-facts", "facts-then-events"]


@pytest.mark.parametrize("order", ORDERS)
def test_forget_user_in_both_memories_leaves_no_trace_in_any_table_or_the_cache(scratch_store, embedder, tmp_path,
                                                                                order):  # fmt: skip
    family = erasure_figures()
    ErasureCase(scratch_store, embedder.inner, order, tmp_path / "cache" / "embeddings.sqlite").run(family)
    assert family.failures() == [], family.found  # no table, index or cache entry holds the user; the kept user
    assert family.figures["cases"] == 1  # keeps every unit, fact and cache entry
    assert family.figures["fact_memory_cache_traces"] == family.figures["table_traces"] == 0
