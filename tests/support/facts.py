from __future__ import annotations

import pytest

from tests.conftest import ROOT

FACT_FIXTURES = ROOT / "fixtures" / "facts"


@pytest.fixture(scope="session")
def fact_set():
    from memlab import lab

    return lab.load_fixtures(FACT_FIXTURES)


class ScriptedExtractor:
    """Returns the candidates it was given for each session: the input of a test, not a stand-in for memlab."""

    name = "scripted"

    def __init__(self, by_session):
        self.by_session = by_session

    def extract(self, events, *, session_id, registry, current_keys=()):
        return list(self.by_session.get(session_id, []))
