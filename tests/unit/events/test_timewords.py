"""Time phrases in questions resolve to the right window against the moment asked: every phrase family, the
timezone and year-boundary cases, the words that must not be taken for dates, and well-formedness properties."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab import ConfigError
from memlab.events.timewords import KINDS, TimeWindow, resolve_time
from tests.conftest import examples

EST = timezone(timedelta(hours=-5))
A = datetime(2023, 5, 20, 14, 0, tzinfo=UTC)  # a Saturday
J = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)  # a Wednesday, just after a year boundary
F = datetime(2024, 2, 15, 12, 0, tzinfo=UTC)  # before May: "in May" is last year's
E = datetime(2023, 5, 20, 22, 30, tzinfo=EST)  # already 21 May in UTC


def d(*parts: int, tz=UTC) -> datetime:
    return datetime(*parts, tzinfo=tz)


@pytest.mark.parametrize(
    ("question", "asked", "start", "end"),
    [
        # days
        ("What did I eat today?", A, d(2023, 5, 20), d(2023, 5, 21)),
        ("What did we talk about yesterday?", A, d(2023, 5, 19), d(2023, 5, 20)),
        ("What did I say the day before yesterday?", A, d(2023, 5, 18), d(2023, 5, 19)),
        ("What did I cook last night?", A, d(2023, 5, 19, 18), d(2023, 5, 20, 6)),
        ("What did I mention the other day about Rome?", A, d(2023, 5, 14), d(2023, 5, 20)),
        # calendar periods
        ("What have I done this week?", A, d(2023, 5, 15), d(2023, 5, 22)),
        ("What did I do last week?", A, d(2023, 5, 8), d(2023, 5, 15)),
        ("What did I do the week before last?", A, d(2023, 5, 1), d(2023, 5, 8)),
        ("What did I buy this month?", A, d(2023, 5, 1), d(2023, 6, 1)),
        ("What did I buy last month?", A, d(2023, 4, 1), d(2023, 5, 1)),
        ("Which books did I read this year?", A, d(2023, 1, 1), d(2024, 1, 1)),
        ("Which books did I read last year?", A, d(2022, 1, 1), d(2023, 1, 1)),
        ("What did I plan earlier this year?", A, d(2023, 1, 1), d(2023, 5, 21)),
        ("What did I buy last month?", J, d(2023, 12, 1), d(2024, 1, 1)),
        ("What did I do last week?", J, d(2024, 1, 1), d(2024, 1, 8)),
        ("What did I read last year?", J, d(2023, 1, 1), d(2024, 1, 1)),
        ("What did I read this year?", J, d(2024, 1, 1), d(2025, 1, 1)),
        # rolling
        ("Where did I go in the past week?", A, d(2023, 5, 13, 14), A),
        ("What did I spend in the past month?", A, d(2023, 4, 20, 14), A),
        ("How did I sleep over the last month?", A, d(2023, 4, 20, 14), A),
        ("How did I sleep in the last week?", A, d(2023, 5, 13, 14), A),
        ("How did I sleep during the last year?", A, d(2022, 5, 20, 14), A),
        ("What did I eat the last 30 days?", A, d(2023, 4, 20, 14), A),
        ("What did I read this past week?", A, d(2023, 5, 13, 14), A),
        ("What did I say in the last 24 hours?", A, d(2023, 5, 19, 14), A),
        ("Which films did I see in the past year?", A, d(2022, 5, 20, 14), A),
        ("What did I buy in the past month?", J, d(2023, 12, 10, 9), J),
        ("What happened recently?", A, A - timedelta(days=30), A),
        ("What have I been reading lately?", A, A - timedelta(days=30), A),
        ("less than a week ago, what did I say?", A, A - timedelta(days=7), A),
        # N units ago: exact counts get one unit centred on the point, fuzzy counts one unit either side
        ("What did I say 3 days ago?", A, d(2023, 5, 17), d(2023, 5, 18)),
        ("What did I say three days ago?", A, d(2023, 5, 17), d(2023, 5, 18)),
        ("What did I say a day ago?", A, d(2023, 5, 19), d(2023, 5, 20)),
        ("What did I say a couple of days ago?", A, d(2023, 5, 17), d(2023, 5, 20)),
        ("What did I say a few days ago?", A, d(2023, 5, 16), d(2023, 5, 19)),
        ("What did I book two weeks ago?", A, d(2023, 5, 3), d(2023, 5, 10)),
        ("What did I book 2 weeks ago?", A, d(2023, 5, 3), d(2023, 5, 10)),
        ("What did I book a couple of weeks ago?", A, d(2023, 4, 29), d(2023, 5, 14)),
        ("What did I book about two weeks ago?", A, d(2023, 4, 29), d(2023, 5, 14)),
        ("What did I book a week or so ago?", A, d(2023, 5, 6), d(2023, 5, 20)),
        ("What did I book two weeks ago?", J, d(2023, 12, 24), d(2023, 12, 31)),
        ("What did I buy a month ago?", A, d(2023, 4, 5), d(2023, 5, 6)),
        ("What did I buy a month ago?", J, d(2023, 11, 25), d(2023, 12, 26)),
        ("What did I buy six months ago?", A, d(2022, 11, 5), d(2022, 12, 6)),
        ("What did I buy a few months ago?", A, d(2023, 1, 21), d(2023, 3, 23)),
        ("Where did I live a year ago?", A, d(2022, 5, 20) - timedelta(days=182), d(2022, 5, 20) + timedelta(days=183)),
        (
            "Where did I live 2 years ago?",
            A,
            d(2021, 5, 20) - timedelta(days=182),
            d(2021, 5, 20) + timedelta(days=183),
        ),
        ("What did I say 3 hours ago?", A, d(2023, 5, 20, 10, 30), d(2023, 5, 20, 11, 30)),
        # weekends and weekdays
        ("What did I do last weekend?", A, d(2023, 5, 13), d(2023, 5, 15)),
        ("What did I do this past weekend?", A, d(2023, 5, 13), d(2023, 5, 15)),
        ("What did I do over the weekend?", A, d(2023, 5, 20), d(2023, 5, 22)),  # asked on a Saturday
        ("What did I do over the weekend?", J, d(2024, 1, 6), d(2024, 1, 8)),
        ("What did I do last Monday?", A, d(2023, 5, 15), d(2023, 5, 16)),
        ("What did I do on Monday?", A, d(2023, 5, 15), d(2023, 5, 16)),
        ("What did I do last Friday?", A, d(2023, 5, 19), d(2023, 5, 20)),
        ("What did I do on Saturday?", A, d(2023, 5, 13), d(2023, 5, 14)),  # today is Saturday: the one before
        ("What did I do last Sunday?", J, d(2024, 1, 7), d(2024, 1, 8)),
        # months and dates
        ("What did I do in May?", A, d(2023, 5, 1), d(2023, 6, 1)),
        ("What did I do in May?", F, d(2023, 5, 1), d(2023, 6, 1)),
        ("What did I do in May 2022?", A, d(2022, 5, 1), d(2022, 6, 1)),
        ("What did I do last May?", A, d(2022, 5, 1), d(2022, 6, 1)),
        ("What did I do last May?", F, d(2023, 5, 1), d(2023, 6, 1)),
        ("What did I do in June?", A, d(2022, 6, 1), d(2022, 7, 1)),
        ("What did I do in december?", J, d(2023, 12, 1), d(2024, 1, 1)),
        ("What did I do last December?", J, d(2023, 12, 1), d(2024, 1, 1)),
        ("What did I do in early March?", A, d(2023, 3, 1), d(2023, 3, 11)),
        ("What did I do in mid-May?", A, d(2023, 5, 11), d(2023, 5, 21)),
        ("What did I do at the end of April?", A, d(2023, 4, 21), d(2023, 5, 1)),
        ("What did I do on May 3rd?", A, d(2023, 5, 3), d(2023, 5, 4)),
        ("What did I do May 3?", A, d(2023, 5, 3), d(2023, 5, 4)),
        ("What did I do on 3 May?", A, d(2023, 5, 3), d(2023, 5, 4)),
        ("What did I do on the 3rd of May?", A, d(2023, 5, 3), d(2023, 5, 4)),
        ("What did I do on May 25?", A, d(2022, 5, 25), d(2022, 5, 26)),  # not yet this year
        ("What did I do on May 3, 2021?", A, d(2021, 5, 3), d(2021, 5, 4)),
        ("What did I do on Dec 31?", J, d(2023, 12, 31), d(2024, 1, 1)),
        ("What did I do on Feb 29?", F, d(2020, 2, 29), d(2020, 3, 1)),
        ("What did I do on 2023-05-03?", A, d(2023, 5, 3), d(2023, 5, 4)),
        ("What did I do in 2021?", A, d(2021, 1, 1), d(2022, 1, 1)),
        ("What did I do in May last year?", A, d(2022, 5, 1), d(2022, 6, 1)),
        ("What did I do on May 3 in 2019?", A, d(2019, 5, 3), d(2019, 5, 4)),
        # seasons
        ("Where did I travel last summer?", A, d(2022, 6, 1), d(2022, 9, 1)),
        ("Where did I travel last winter?", J, d(2022, 12, 1), d(2023, 3, 1)),
        ("Where did I travel in the summer of 2021?", A, d(2021, 6, 1), d(2021, 9, 1)),
        # ranges
        ("What did I do between May 3 and May 10?", A, d(2023, 5, 3), d(2023, 5, 11)),
        ("Where did I work from 2019 to 2021?", A, d(2019, 1, 1), d(2022, 1, 1)),
    ],
)
def test_windows(question, asked, start, end):
    w = resolve_time(question, asked)
    assert w is not None, question
    assert (w.start, w.end, w.kind) == (start, end, "window"), question


@pytest.mark.parametrize(
    ("question", "asked", "start", "end", "kind"),
    [
        ("What did I do before May 3rd?", A, None, d(2023, 5, 3), "before"),
        ("What did I do after May 3rd?", A, d(2023, 5, 4), None, "after"),
        ("What have I done since last week?", A, d(2023, 5, 8), None, "after"),
        ("Where have I worked since 2020?", A, d(2020, 1, 1), None, "after"),
        ("What did I do since yesterday?", A, d(2023, 5, 19), None, "after"),
        ("Where did I live before 2020?", A, None, d(2020, 1, 1), "before"),
        ("Where did I live after 2020?", A, d(2021, 1, 1), None, "after"),
        ("What did I read until last week?", A, None, d(2023, 5, 15), "before"),
        ("Which jobs did I have prior to last year?", A, None, d(2022, 1, 1), "before"),
        ("What did I say more than a week ago?", A, None, d(2023, 5, 13, 14), "before"),
        ("Since May, have I run?", F, d(2023, 5, 1), None, "after"),
    ],
)
def test_open_windows(question, asked, start, end, kind):
    w = resolve_time(question, asked)
    assert w is not None, question
    assert (w.start, w.end, w.kind) == (start, end, kind), question


@pytest.mark.parametrize(
    "question",
    [
        "Where do I currently live?",
        "Where do I live now?",
        "What is my job these days?",
        "What is my latest address?",
        "What was the most recent book I read?",
        "Do I still play tennis?",
        "Do I go climbing anymore?",
        "What am I reading at the moment?",
        "What am I working on right now?",
        "What is my current phone number?",
        "When was the last time I saw the dentist?",
    ],
)
def test_recency_cues(question):
    w = resolve_time(question, A)
    assert w is not None, question
    assert (w.start, w.end, w.kind) == (None, None, "recency"), question


@pytest.mark.parametrize(
    "question",
    [
        "May I ask what my favourite colour is?",
        "I may go to the gym; what did I say about shoes?",
        "Wait a second, what is my dog's name?",
        "Give me a minute: what is my sister called?",
        "What did I say about the march of progress?",
        "The March of Dimes: how much did I give?",
        "Who is Jan's manager?",
        "Which August Wilson play did I like?",
        "What do I do every Monday?",
        "What is planned for next Monday?",
        "What did I say about the last day of the trip?",
        "After 2000 steps, do I stop?",
        "In the fall of Rome essay, what did I argue?",
        "In the past, what was my job?",
        "What did I say a while ago about the car?",
        "What is on for tomorrow?",
        "What is my favourite food?",
        "",
    ],
)
def test_not_a_time_phrase(question):
    assert resolve_time(question, A) is None


def test_lowercase_may_is_not_a_month_but_lowercase_june_is():
    assert resolve_time("what did I do in may", A) is None
    w = resolve_time("what did I do in june", A)
    assert w is not None and (w.start, w.end) == (d(2022, 6, 1), d(2022, 7, 1))


def test_windows_are_in_the_askers_timezone():
    """22:30 on 20 May in UTC-5 is 21 May in UTC: 'today' and 'yesterday' follow the asker's wall clock."""
    today, yesterday = resolve_time("today", E), resolve_time("yesterday", E)
    assert today is not None and yesterday is not None
    assert (today.start, today.end) == (d(2023, 5, 20, tz=EST), d(2023, 5, 21, tz=EST))
    assert (yesterday.start, yesterday.end) == (d(2023, 5, 19, tz=EST), d(2023, 5, 20, tz=EST))
    assert today.start.utcoffset() == timedelta(hours=-5)
    assert today.contains(E) and not today.contains(d(2023, 5, 21, 5, 30))  # 00:30 on the 21st in UTC-5
    last_week, last_month = resolve_time("last week", E), resolve_time("last month", E)
    assert last_week is not None and (last_week.start, last_week.end) == (d(2023, 5, 8, tz=EST), d(2023, 5, 15, tz=EST))
    assert last_month is not None and last_month.start == d(2023, 4, 1, tz=EST)
    assert resolve_time("recently", E) == TimeWindow(E - timedelta(days=30), E, "recently", "window")


def test_phrase_is_the_matched_text():
    assert resolve_time("What did I buy last month?", A).phrase == "last month"
    assert resolve_time("What did I do in May?", A).phrase == "in May"
    assert resolve_time("What happened before May 3rd?", A).phrase == "before May 3rd"
    assert resolve_time("What did I say the day before yesterday?", A).phrase == "the day before yesterday"
    assert resolve_time("Where did I go in the past month?", A).phrase == "in the past month"


@pytest.mark.parametrize(
    ("question", "phrase"),
    [
        ("What did I say yesterday about last month's budget?", "yesterday"),
        ("Last year, in May, where did I go?", "in May"),
        ("Since 2020, what did I do last week?", "last week"),  # a closed window beats an open one
        ("Where did I live before 2020, and where do I live now?", "before 2020"),  # a date beats a recency cue
        ("Do I still go running, like I did last month?", "last month"),
        ("What did I say most recently?", "most recently"),  # not the window "recently"
    ],
)
def test_most_specific_phrase_wins(question, phrase):
    w = resolve_time(question, A)
    assert w is not None and w.phrase == phrase


def test_contains_is_half_open():
    w = resolve_time("yesterday", A)
    assert w is not None
    assert w.contains(d(2023, 5, 19)) and w.contains(d(2023, 5, 19, 23, 59))
    assert not w.contains(d(2023, 5, 20)) and not w.contains(d(2023, 5, 18, 23, 59))
    assert TimeWindow(None, None, "now", "recency").contains(A)


def test_naive_asked_at_is_refused():
    with pytest.raises(ConfigError, match="timezone-aware"):
        resolve_time("What did I do yesterday?", datetime(2023, 5, 20, 14, 0))


def test_non_text_question_is_refused():
    with pytest.raises(ConfigError, match="question must be a str"):
        resolve_time(None, A)  # type: ignore[arg-type]


# --- properties -------------------------------------------------------------------------------------------

ZONES = [
    UTC,
    EST,
    timezone(timedelta(hours=5, minutes=45)),
    ZoneInfo("America/New_York"),
    ZoneInfo("America/Sao_Paulo"),  # DST used to start at midnight: local midnight did not exist
    ZoneInfo("Australia/Lord_Howe"),  # half-hour DST
    ZoneInfo("Pacific/Apia"),  # skipped 30 December 2011 entirely
]
asked_ats = st.datetimes(
    min_value=datetime(1990, 1, 1), max_value=datetime(2080, 12, 31), timezones=st.sampled_from(ZONES)
)

PAST = [
    "yesterday", "the day before yesterday", "last night", "the other day", "last week", "the week before last",
    "last month", "last year", "in the past week", "over the last month", "the last 30 days", "the past few days",
    "in the last 24 hours", "3 days ago", "a day ago", "two weeks ago", "a couple of weeks ago", "a few days ago",
    "about a month ago", "12 months ago", "a year ago", "a few years ago", "3 hours ago", "a week or so ago",
    "last weekend", "this past weekend", "last Monday", "on Wednesday", "last Sunday", "last May", "last December",
    "on May 3rd", "3 May", "the 29th of February", "May 31", "last summer", "last winter", "recently", "lately",
    "before last week", "until yesterday", "more than two weeks ago", "less than a week ago",
]  # fmt: skip
CURRENT = ["today", "this week", "this month", "this year", "earlier this year", "earlier this month"]
NAMED = ["in May", "in December", "in early March", "in the summer", "over the weekend"]
AFTER = ["since last week", "after yesterday", "since May", "since 3 days ago", "after last month"]


def _well_formed(w: TimeWindow | None, asked: datetime) -> TimeWindow:
    assert w is not None
    assert w.kind in KINDS
    for bound in (w.start, w.end):
        assert bound is None or (bound.tzinfo is not None and bound.utcoffset() is not None)
    if w.start is not None and w.end is not None:
        assert w.start < w.end
    return w


@settings(max_examples=examples(300), deadline=None)
@given(asked=asked_ats, phrase=st.sampled_from(PAST))
def test_past_phrases_end_by_tomorrow(asked, phrase):
    w = _well_formed(resolve_time(f"What did I say {phrase}?", asked), asked)
    assert w.end is not None and w.end <= asked + timedelta(days=1)
    assert w.start is None or w.start < asked


@settings(max_examples=examples(200), deadline=None)
@given(asked=asked_ats, phrase=st.sampled_from(CURRENT))
def test_current_periods_contain_the_moment_asked(asked, phrase):
    w = _well_formed(resolve_time(f"What did I say {phrase}?", asked), asked)
    assert w.start is not None and w.end is not None
    assert w.start <= asked < w.end


@settings(max_examples=examples(200), deadline=None)
@given(asked=asked_ats, phrase=st.sampled_from(NAMED))
def test_named_periods_are_not_in_the_future(asked, phrase):
    w = _well_formed(resolve_time(f"What did I do {phrase}?", asked), asked)
    assert w.kind == "window" and w.start is not None and w.start <= asked


@settings(max_examples=examples(200), deadline=None)
@given(asked=asked_ats, phrase=st.sampled_from(AFTER))
def test_open_after_windows_start_by_tomorrow(asked, phrase):
    w = _well_formed(resolve_time(f"What did I do {phrase}?", asked), asked)
    assert w.kind == "after" and w.end is None
    assert w.start is not None and w.start <= asked + timedelta(days=1)


@settings(max_examples=examples(300), deadline=None)
@given(asked=asked_ats, n=st.integers(1, 12), unit=st.sampled_from(["day", "week", "month", "year"]))
def test_n_units_ago_contains_its_nominal_day_and_excludes_today(asked, n, unit):
    w = _well_formed(resolve_time(f"What happened {n} {unit}{'s' if n > 1 else ''} ago?", asked), asked)
    assert w.start is not None and w.end is not None
    nominal = {"day": 1, "week": 7}.get(unit)
    if nominal:
        day = asked.date() - timedelta(days=n * nominal)
    else:
        months = n * (12 if unit == "year" else 1)
        y, m0 = divmod(asked.month - 1 - months, 12)
        day = asked.date().replace(year=asked.year + y, month=m0 + 1, day=min(asked.day, 28))
    assert w.start.date() <= day < w.end.date()
    assert w.end.date() <= asked.date()


@settings(max_examples=examples(300), deadline=None)
@given(asked=asked_ats, question=st.text(max_size=80))
def test_any_text_gives_none_or_a_well_formed_window(asked, question):
    w = resolve_time(question, asked)
    if w is not None:
        _well_formed(w, asked)
        assert w.phrase and w.phrase in question
