"""judge.html in a real headless browser (Playwright driving Debian's chromium, as the report.html test does):
judge three queries from the keyboard, export, and the exported file loads as a judged data set with exactly
those judgments; the page hides which system found a hit and keeps its work across a reload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from tests.integration.lab.datasets.test_judged_set import APP, write_pool
from tests.integration.lab.judging.test_pool import QUERIES, write_queries, write_sessions


@pytest.fixture
def judged_files(tmp_path) -> dict[str, Path]:
    sessions = write_sessions(tmp_path / "logs.jsonl", APP)
    pool = write_pool(tmp_path / "pool.json", sessions, systems=("event", "chunk3"))
    result = CliRunner().invoke(app, ["judge", "page", "--pool", str(pool), "--out", str(tmp_path / "judge.html")])
    assert result.exit_code == 0, result.output
    return {"queries": write_queries(tmp_path / "queries.jsonl", APP, QUERIES), "sessions": tmp_path / "logs.jsonl",
            "pool": pool, "page": tmp_path / "judge.html"}  # fmt: skip


def current(page) -> tuple[str, str]:
    hit = page.locator("#hits .hit.current")
    return hit.get_attribute("data-session"), hit.get_attribute("data-event")


def test_three_queries_judged_by_keyboard_export_and_load_as_a_judged_set(browser, judged_files, tmp_path):
    html = judged_files["page"].read_text()
    assert "found_by" not in html and "chunk3" not in html  # which system found a hit is not on the page
    page = browser.new_page()
    page.goto(judged_files["page"].as_uri())
    page.fill("#assessor", "ana")
    expected: dict[tuple[str, str, str], int] = {}
    plan = {"q-cat": ["r", "n", "s", "1"], "q-sister": ["0", "1"], "q-car": ["n", "j", "r"]}
    for qid, keys in plan.items():
        assert page.locator("#query").inner_text().startswith(next(t for q, _, t in QUERIES if q == qid))
        page.locator("#help").click()  # keys go to the page, not the assessor field (a click on a hit would select it)
        for key in keys:
            session, event = current(page)
            page.keyboard.press(key)
            if key in "r1n0":
                expected[(qid, session, event)] = int(key in "r1")
        page.keyboard.press("ArrowRight")
    pooled = sum(len(q.get("hits")) for q in lab.datasets.read_pool(judged_files["pool"]).queries)
    progress = f"query 3 of 3; {len(expected)} of {pooled} hits judged"
    assert page.locator("#progress").inner_text() == progress
    page.reload()  # saved in the browser as it goes
    assert page.locator("#progress").inner_text() == progress
    assert page.input_value("#assessor") == "ana"
    with page.expect_download() as download:
        page.click("#export")
    exported = tmp_path / "judgments.jsonl"
    download.value.save_as(exported)
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert len(lines) == len(expected) and {line["assessor"] for line in lines} == {"ana"}
    assert set(lines[0]) == {"query", "event_id", "relevance", "assessor", "time"}

    data = lab.load_dataset({"name": "mine", "format": "judged", "judgments": str(exported),
                             **{k: str(judged_files[k]) for k in ("queries", "sessions", "pool")}})  # fmt: skip
    loaded = {(q.id, s, e): int((s, e) in q.evidence) for q in data.questions for s, e in q.judged}
    assert loaded == expected
    assert sorted(q.id for q in data.questions) == sorted(plan)


def export(page, tmp_path: Path) -> list[dict]:
    with page.expect_download() as download:
        page.click("#export")
    exported = tmp_path / "clicked.jsonl"
    download.value.save_as(exported)
    return [json.loads(line) for line in exported.read_text().splitlines()]


def test_clicks_judge_as_the_keys_do_and_the_query_stays_in_sight(browser, judged_files, tmp_path):
    height = 320  # a short window: the hits of a query overflow it
    page = browser.new_page(viewport={"width": 900, "height": height})
    page.goto(judged_files["page"].as_uri())
    page.fill("#assessor", "bo")
    hits = page.locator("#hits .hit")
    assert hits.count() >= 3
    expected: dict[tuple[str, str], int] = {}
    for index, button, relevance in ((2, "r", 1), (0, "n", 0), (1, "s", None)):  # the key each button stands for
        hit = hits.nth(index)
        key = (hit.get_attribute("data-session"), hit.get_attribute("data-event"))
        hit.locator(f'button[data-key="{button}"]').click()
        if relevance is not None:
            expected[key] = relevance
        assert page.locator(f'#hits .hit[data-event="{key[1]}"][data-session="{key[0]}"]').get_attribute(
            "data-state") == ("" if relevance is None else str(relevance))  # fmt: skip
    assert page.locator("#progress").inner_text().endswith(f"{len(expected)} of {total_hits(judged_files)} hits judged")
    assert current(page) == (hits.nth(2).get_attribute("data-session"), hits.nth(2).get_attribute("data-event")), (
        "after a judgment the next hit is the current one, as after a key")
    hits.nth(0).locator(".text").click()  # a click on a hit's text makes it the current one
    assert current(page) == (hits.nth(0).get_attribute("data-session"), hits.nth(0).get_attribute("data-event"))

    first_query = page.locator("#query").inner_text()
    page.mouse.wheel(0, 5000)
    page.wait_for_function("window.scrollY > 0")
    box = page.locator("#query").bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height, box
    page.click("#next-query")
    assert page.locator("#query").inner_text() != first_query
    page.click("#prev-query")
    assert page.locator("#query").inner_text() == first_query

    lines = export(page, tmp_path)
    qid = lab.judging.judging_page_data(lab.datasets.read_pool(judged_files["pool"]))["queries"][0]["query_id"]
    assert {(line["query"], line["event_id"], line["relevance"]) for line in lines} == {
        (qid, event, relevance) for (_, event), relevance in expected.items()}


def total_hits(judged_files) -> int:
    return sum(len(q.get("hits")) for q in lab.datasets.read_pool(judged_files["pool"]).queries)


def test_the_hit_order_is_shuffled_by_seed_and_the_same_for_the_same_seed(judged_files):
    pool = lab.datasets.read_pool(judged_files["pool"])
    orders = {seed: [[h["event_id"] for h in q["hits"]] for q in lab.judging.judging_page_data(pool, seed)["queries"]]
              for seed in (0, 0, 1)}  # fmt: skip
    pooled = [[h["event_id"] for h in q["hits"]] for q in pool.queries]
    assert orders[0] != pooled and orders[0] != orders[1]
    assert [sorted(o) for o in orders[0]] == [sorted(o) for o in pooled]
    assert orders[0] == [[h["event_id"] for h in q["hits"]] for q in lab.judging.judging_page_data(pool, 0)["queries"]]


def test_text_that_closes_the_script_element_stays_inert(browser, judged_files, tmp_path):
    pool = json.loads(judged_files["pool"].read_text())
    pool["queries"][0]["text"] = "</script><!--<script>alert(1)//"
    (tmp_path / "evil.json").write_text(json.dumps(pool))
    out = lab.judging.write_judge_page(lab.datasets.read_pool(tmp_path / "evil.json"), tmp_path / "evil.html")
    page = browser.new_page()
    page.goto(out.as_uri())
    assert page.locator("#query").inner_text().startswith("</script><!--<script>alert(1)//")
