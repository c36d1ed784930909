"""report.html of a real run, opened in a real headless browser (Playwright driving Debian's chromium, which
`make test` installs): through the page, filter to one question and see each system's hits.

The run is the fixtures suite's (made once per test session), or the folder MEMLAB_REPORT_RUN names: `make gate`
runs these tests again on the `ci` run it has just made."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memlab import lab


@pytest.fixture(scope="module")
def report_run(request) -> Path:
    given = os.environ.get("MEMLAB_REPORT_RUN")
    return Path(given).resolve() if given else request.getfixturevalue("fixtures_run")


@pytest.fixture(scope="module")
def page(report_run, browser):
    page = browser.new_page()
    page.goto((report_run / "report.html").as_uri())
    return page


def test_the_page_filters_to_one_question_and_shows_each_systems_hits(page, report_run):
    hits = lab.question_hits(report_run, "fixtures")
    systems = lab.report.viewer_systems(lab.RunFolder(report_run), "fixtures")
    assert {"pg-exact", "auto", "faiss-exact-event"} <= set(systems)
    qid = hits[hits.relevant].question_id.iloc[0]  # a question some system answered
    assert page.locator("#headline li").count() >= 1
    page.select_option("#f-dataset", "fixtures")
    page.fill("#f-search", qid)
    listed = page.locator("#questions div")
    assert listed.count() == 1
    listed.first.click()
    shown = page.locator("#detail .system-hits")
    assert sorted(shown.nth(i).get_attribute("data-system") for i in range(shown.count())) == sorted(systems)
    for system in systems:
        expected = hits[(hits.question_id == qid) & (hits.system == system)]
        block = page.locator(f'#detail .system-hits[data-system="{system}"]')
        assert block.locator("tr.hit").count() == len(expected), system
        assert block.locator("tr.relevant").count() == int(expected.relevant.sum()), system
    first = hits[(hits.question_id == qid) & (hits.system == "pg-exact")].sort_values("rank").iloc[0]
    row = page.locator('#detail .system-hits[data-system="pg-exact"] tr.hit').first
    assert first.unit_id in row.inner_text() and f"{first.distance:.3f}" in row.inner_text()
    assert first.text and first.text.split(": ", 1)[-1][:30] in row.inner_text(), "the hit's text is shown"


def test_found_by_one_system_missed_by_another(page, report_run):
    hits = lab.question_hits(report_run, "fixtures")
    found = {s: set(hits[(hits.system == s) & hits.relevant].question_id) for s in ("pg-exact", "hnsw-ef40-off")}
    answerable = {q.id for q in lab.RunFolder(report_run).questions("fixtures") if q.relevant}
    expected = found["pg-exact"] - found["hnsw-ef40-off"] & answerable
    page.select_option("#f-dataset", "fixtures")
    page.fill("#f-search", "")
    page.select_option("#f-found", "pg-exact")
    page.select_option("#f-missed", "hnsw-ef40-off")
    listed = page.locator("#questions div")
    assert {listed.nth(i).get_attribute("data-qid") for i in range(listed.count())} == expected
    page.select_option("#f-found", "")
    page.select_option("#f-missed", "")


def test_tables_sort_and_plots_are_inline(page):
    table = page.locator("#tables table").first
    header = table.locator("th").nth(1)
    header.click()
    first = [table.locator("tbody tr").nth(i).locator("td").nth(1).inner_text() for i in range(2)]
    header.click()
    again = [table.locator("tbody tr").nth(i).locator("td").nth(1).inner_text() for i in range(2)]
    assert first != again or first[0] == first[1], "a second click reverses the order"
    sources = page.locator("#plots img")
    assert all(sources.nth(i).get_attribute("src").startswith("data:image/png") for i in range(sources.count()))


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory, memlab_home, store, browser):
    """report.html of a run whose events, questions and answers hold `<!--<script>`, `</script>` and friends."""
    from memlab.lab.reliability.probes.leaks import hostile_run

    run = hostile_run(tmp_path_factory.mktemp("hostile"))
    page = browser.new_page()
    page.goto((run / "report.html").as_uri())
    return page


def test_hostile_text_is_shown_literally_and_the_page_still_works(hostile_page):
    from memlab.lab.reliability.probes.leaks import HOSTILE

    page = hostile_page
    assert page.evaluate("typeof DATA === 'object' && DATA !== null"), "the data script ran"
    page.select_option("#f-dataset", "hostile")
    listed = page.locator("#questions div")
    assert listed.count() == 2, "both questions are listed (the page is not blank)"
    page.fill("#f-search", "q-hostile")
    listed.first.click()
    assert page.locator("#question-text").inner_text() == "What is my notes file called, <!--<script> or </script>?"
    assert "</SCRIPT <!-- -->" in page.locator("#detail").inner_text(), "the answer is shown as written"
    shown = page.locator('#detail .system-hits[data-system="pg-exact"] td.text')
    texts = " ".join(shown.nth(i).text_content() for i in range(shown.count()))
    assert sum(h in texts for h in HOSTILE) >= 4, texts  # the hits (k = 5) show the hostile texts literally
    assert page.locator("#detail script").count() == 0 and page.locator("#detail b", has_text="bold").count() == 0
