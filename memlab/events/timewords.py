"""Resolve the time phrases of a conversational question against the moment it is asked.

Memory search can only prefer memories from "last month" or "two weeks ago" if those words become a span of
instants; this module does that and nothing else: pure functions, standard library only, no I/O.

`resolve_time(question, asked_at)` returns a `TimeWindow` or None. Every bound is computed on the wall clock of
`asked_at`'s timezone, so "yesterday" asked at 22:00 in New York is New York's yesterday, not UTC's.

The choices, and why:

- Weeks start on Monday (ISO 8601). "this/last week|month|year" are calendar periods; "the past week",
  "in/over/within the last month", "the last 30 days", "this past week" are rolling, ending at `asked_at`.
- "N units ago" names a point, and people round: exact counts get a window one unit wide centred on the point
  ("two weeks ago" = the 7 days centred 14 days back; "3 months ago" = 31 days centred 3 months back; "a year
  ago" = 365 days), aligned to local midnights. Fuzzy counts ("a couple of" = 2, "a few" = 3, or any count with
  "about/around/roughly/or so") get one unit either side ("a couple of weeks ago" = [today-21d, today-6d)).
  The window never reaches into today. Hours work the same way ("3 hours ago" = the hour centred 3 hours back).
  "more than N units ago" is kind "before" (ending N units back), "less than N units ago" is rolling.
- A month, day or season named without a year is its most recent occurrence not after `asked_at` (asked in
  February 2024, "in May" is May 2023; asked on 20 May, "in May" is the current May). "last May" is the most
  recent May before the current month. "on Monday" / "last Monday" is the most recent Monday before today.
  When another phrase names a year, a year-less date is moved into it ("in May last year", "May 3 in 2019").
- "recently" / "lately" = the rolling 30 days; "the other day" = the 6 days before today; "last night" =
  yesterday 18:00 to today 06:00; "this morning/evening", "tonight", "earlier today" = today.
- Seasons are northern-hemisphere meteorological ones (spring = March-May ...); a season with a year starts in
  that year ("winter 2022" = December 2022 to February 2023).
- "before X" ends where X starts, "after X" starts where X ends, "since X" starts where X starts, "until X" ends
  where X ends; "between X and Y" / "from X to Y" is [start of X, end of Y).
- An event instead of a date ("before I moved", "after my trip to Japan", "since we got the dog") is not a
  window this module can compute: `event_anchor` returns the event and the direction, and the search finds the
  event in the user's memory and uses its time (`EventMemory.search(..., asked_at=)` with time handling on).
- Future phrases ("tomorrow", "next week") are ignored: a memory was written before the question, so a future
  phrase names what it is about, not when it happened.
- False positives are worse than misses (a wrong window hides the right memory), so: "may", "march", "august"
  and month abbreviations count only when capitalised, and a bare month, year or season counts only after
  in/on/during/since/before/after/until/from/between, or with a day, a year, or last/this/early/mid/late.
  A bare year needs in/during/since/before/after/until (or a range) and is not a count ("after 2000 steps").
  Seconds and minutes are never time windows ("wait a second"); neither are vague phrases ("a while ago").
- When several phrases appear, the most specific wins: the shortest closed window, then an open one
  (before/after), then a recency cue ("currently", "latest", "still" ...), which has no bounds at all.
"""

from __future__ import annotations

import re
from calendar import monthrange
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from memlab.errors import ConfigError

__all__ = ["KINDS", "EventAnchor", "TimeWindow", "event_anchor", "resolve_time"]

KINDS = ("window", "before", "after", "recency")


@dataclass(frozen=True)
class TimeWindow:
    """When the memory a question asks about happened: [start, end), either side open when None."""

    start: datetime | None  # inclusive, timezone-aware (None = open)
    end: datetime | None  # exclusive, timezone-aware (None = open)
    phrase: str  # the text matched, e.g. "last month"
    kind: str  # "window" | "before" | "after" | "recency" (asks for the latest/current value)

    def contains(self, moment: datetime) -> bool:
        """Whether `moment` falls in the window (always True for a recency cue, which only orders)."""
        return (self.start is None or moment >= self.start) and (self.end is None or moment < self.end)


# --- vocabulary -------------------------------------------------------------------------------------------

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
    "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sept": 9, "sep": 9,
    "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
# Full names that are not also everyday English words may be written in lower case.
_CASE_FREE_MONTHS = {"january", "february", "april", "june", "july", "september", "october", "november", "december"}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_APPROX = {"about", "around", "roughly", "approximately", "almost", "nearly", "some", "like", "maybe"}

_MONTH = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b(?:\.(?=\s*\d))?"
_PART = r"(?:(?P<part>early|mid|late)[\s-]+|(?:the\s+)?(?P<part2>beginning|start|middle|end)\s+of\s+)"
_YEAR = r"(?P<y>(?:19|20)\d{2})"
_NUM = (
    r"\d{1,4}|(?:a\s+)?couple(?:\s+of)?|(?:a\s+)?few|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|an?"
)
# Words that make a 4-digit number a count, not a year ("after 2000 steps").
_COUNTED = (
    r"(?:steps|calories|kcal|words|people|users|dollars|euros|pounds|miles|km|meters|metres|feet|times|points"
    r"|items|rows|records|units|pages|tokens|lines|bytes|kb|mb|gb)"
)
_UNIT = r"(?P<u>hour|day|week|month|year)(?P<pl>s)?"

# What lets a bare month, year or season count as a date ("in May", "since 2020", "over the summer").
_TRIGGER = re.compile(
    r"(?:\b(?:in|on|during|throughout|around|since|before|after|until|till|from|between|prior\s+to)(?:\s+the)?"
    r"|\bover\s+the)\s+$",
    re.IGNORECASE,
)
# A bare year is more often a count ("around 2000 steps", "from 1900 calories"), so fewer words make it a date;
# "from 2019 to 2021" still resolves as a range.
_YEAR_TRIGGER = re.compile(r"\b(?:in|during|throughout|since|before|after|until|till|prior\s+to)\s+$", re.I)
_EXTEND = re.compile(r"(?:\b(?:in|on|during|throughout)(?:\s+the)?|\bover\s+the)\s+$", re.IGNORECASE)
_CONNECTOR = re.compile(r"\b(?P<c>ever\s+since|since|before|prior\s+to|after|up\s+until|until|till)\s+$", re.I)
_RANGE_START = re.compile(r"\b(?:between|from)\s+$", re.IGNORECASE)
_RANGE_JOIN = re.compile(r"\s*(?:and|to|through|thru|until|till|-|–)\s*", re.IGNORECASE)
_NOT_PAST = re.compile(r"\b(?:every|each|next|coming|following)\s+$", re.IGNORECASE)


# --- calendar arithmetic ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ctx:
    """The question and the local clock it is resolved against."""

    text: str
    asked: datetime
    tz: tzinfo
    today: date

    def at(self, d: date, hour: int = 0) -> datetime:
        """Local wall-clock time on day d (midnight by default)."""
        return datetime.combine(d, time(hour), tzinfo=self.tz)

    def days(self, first: date, stop: date) -> _Span:
        """The window from midnight of `first` to midnight of `stop` (exclusive)."""
        return self.at(first), self.at(stop), "window"


_Span = tuple[datetime | None, datetime | None, str]


def _add_months(d: date, n: int) -> date:
    """Shift by calendar months, clamping the day (31 March - 1 month = 28/29 February)."""
    years, month0 = divmod(d.month - 1 + n, 12)
    year = d.year + years
    return d.replace(year=year, month=month0 + 1, day=min(d.day, monthrange(year, month0 + 1)[1]))


def _shift(moment: datetime, unit: str, n: int) -> datetime:
    """`moment` moved by n units on the wall clock (months and years by the calendar)."""
    if unit in ("hour", "day", "week"):
        return moment + timedelta(**{unit + "s": n})
    d = _add_months(moment.date(), n * (12 if unit == "year" else 1))
    return moment.replace(year=d.year, month=d.month, day=d.day)


def _month_window(c: _Ctx, year: int, month: int, m: re.Match[str]) -> _Span:
    """A calendar month, or its first/middle/last third when the phrase says early/mid/late."""
    first = date(year, month, 1)
    stop = _add_months(first, 1)
    part = (m.group("part") or m.group("part2") or "").lower()
    if part in ("early", "beginning", "start"):
        return c.days(first, first.replace(day=11))
    if part in ("mid", "middle"):
        return c.days(first.replace(day=11), first.replace(day=21))
    if part in ("late", "end"):
        return c.days(first.replace(day=21), stop)
    return c.days(first, stop)


def _month_number(word: str) -> int | None:
    """The month a word names, or None when it is probably the verb/modal ("may", "march")."""
    if word.lower() not in _CASE_FREE_MONTHS and not word[0].isupper():
        return None
    return _MONTHS[word.lower()]


def _number(text: str) -> tuple[int, bool]:
    """The count in '3', 'two', 'a couple of', 'a few', and whether it is fuzzy."""
    t = " ".join(text.lower().split())
    if t.isdigit():
        return int(t), False
    if "couple" in t:
        return 2, True
    if "few" in t:
        return 3, True
    return _NUMBER_WORDS[t], False


def _recent_date(c: _Ctx, month: int, day: int) -> date:
    """The most recent month/day not after today (a few years back for 29 February)."""
    for year in range(c.today.year, c.today.year - 9, -1):
        try:
            d = date(year, month, day)
        except ValueError:
            continue
        if d <= c.today:
            return d
    raise ValueError(f"no date {month}/{day}")


def _season(c: _Ctx, name: str, year: int) -> tuple[date, date]:
    """Season `name` starting in `year` (winter starts in December)."""
    first = date(year, _SEASON_START[name], 1)
    return first, _add_months(first, 3)


# --- rule builders: each turns one match into a span, or None when the match is not a date after all ------


def _iso(m: re.Match[str], c: _Ctx) -> _Span:
    d = date(int(m.group("y")), int(m.group("mo")), int(m.group("d")))
    return c.days(d, d + timedelta(days=1))


def _month_day(m: re.Match[str], c: _Ctx) -> _Span | None:
    month = _month_number(m.group("mon"))
    if month is None:
        return None
    day = int(m.group("d"))
    d = date(int(m.group("y")), month, day) if m.group("y") else _recent_date(c, month, day)
    return c.days(d, d + timedelta(days=1))


def _month_year(m: re.Match[str], c: _Ctx) -> _Span | None:
    month = _month_number(m.group("mon"))
    return None if month is None else _month_window(c, int(m.group("y")), month, m)


def _month_alone(m: re.Match[str], c: _Ctx) -> _Span | None:
    month = _month_number(m.group("mon"))
    if month is None:
        return None
    rel = (m.group("rel") or "").lower()
    if rel == "this":
        year = c.today.year
    elif rel in ("last", "previous"):
        year = c.today.year if month < c.today.month else c.today.year - 1
    else:
        year = c.today.year if month <= c.today.month else c.today.year - 1
    return _month_window(c, year, month, m)


def _year_alone(m: re.Match[str], c: _Ctx) -> _Span:
    year = int(m.group("y"))
    return c.days(date(year, 1, 1), date(year + 1, 1, 1))


def _season_window(m: re.Match[str], c: _Ctx) -> _Span | None:
    name = m.group("s").lower()
    rel = " ".join((m.group("rel") or "").lower().split())
    if m.group("y"):
        return c.days(*_season(c, name, int(m.group("y"))))
    if rel == "this":
        year = c.today.year - 1 if name == "winter" and c.today.month <= 2 else c.today.year
        return c.days(*_season(c, name, year))
    for year in range(c.today.year, c.today.year - 3, -1):
        first, stop = _season(c, name, year)
        # last/past: the most recent one that is over; bare ("in the summer"): the most recent one begun.
        if (stop <= c.today) if rel else (first <= c.today):
            return c.days(first, stop)
    return None


def _weekday(m: re.Match[str], c: _Ctx) -> _Span | None:
    if _NOT_PAST.search(c.text[: m.start()]):
        return None
    wd = _WEEKDAYS.index(m.group("wd").lower())
    if (m.group("rel") or "").lower() == "this":
        d = c.today - timedelta(days=c.today.weekday() - wd)
    else:
        d = c.today - timedelta(days=(c.today.weekday() - wd) % 7 or 7)
    return c.days(d, d + timedelta(days=1))


def _weekend(m: re.Match[str], c: _Ctx) -> _Span:
    rel = " ".join((m.group("rel") or "").lower().split())
    saturday = c.today - timedelta(days=c.today.weekday()) + timedelta(days=5)  # this week's
    if rel in ("last", "previous", "past", "this past", "the past") or (not rel and c.today.weekday() < 5):
        saturday -= timedelta(days=7)
    return c.days(saturday, saturday + timedelta(days=2))


def _day_word(m: re.Match[str], c: _Ctx) -> _Span:
    word = " ".join(m.group(0).lower().split())
    t = c.today
    if word == "last night":
        return c.at(t - timedelta(days=1), 18), c.at(t, 6), "window"
    if word == "the other day":
        return c.days(t - timedelta(days=6), t)
    back = 2 if "before yesterday" in word else 1 if word.startswith("yesterday") else 0
    return c.days(t - timedelta(days=back), t - timedelta(days=back - 1))


def _calendar(m: re.Match[str], c: _Ctx) -> _Span:
    rel = " ".join((m.group("rel") or "").lower().split())
    back = 2 if m.group("bl") else 1 if rel in ("last", "previous") else 0
    unit = m.group("u").lower()
    t = c.today
    if unit == "week":
        first = t - timedelta(days=t.weekday() + 7 * back)
        stop = first + timedelta(days=7)
    elif unit == "month":
        first = _add_months(t.replace(day=1), -back)
        stop = _add_months(first, 1)
    else:
        first = date(t.year - back, 1, 1)
        stop = date(t.year - back + 1, 1, 1)
    if rel.startswith("earlier"):
        stop = t + timedelta(days=1)  # up to the end of today
    return c.days(first, stop)


def _ago(m: re.Match[str], c: _Ctx) -> _Span | None:
    n, fuzzy = _number(m.group("n"))
    if n <= 0:
        return None
    unit = m.group("u").lower()
    pre = " ".join((m.group("pre") or "").lower().split())
    if pre in ("more than", "over"):
        return None, _shift(c.asked, unit, -n), "before"
    if pre in ("less than", "under", "within"):
        return _shift(c.asked, unit, -n), c.asked, "window"
    fuzzy = fuzzy or pre in _APPROX or bool(m.group("orso"))
    if unit == "hour":
        centre = c.asked - timedelta(hours=n)
        half = timedelta(hours=1 if fuzzy else 0.5)
        return centre - half, min(centre + half, c.asked), "window"
    if unit in ("day", "week"):
        centre = c.today - timedelta(days=n * (7 if unit == "week" else 1))
    else:
        centre = _add_months(c.today, -n * (12 if unit == "year" else 1))
    half = {"day": (0, 1), "week": (3, 7), "month": (15, 30), "year": (182, 365)}[unit][fuzzy]
    stop = min(centre + timedelta(days=half + 1), c.today)
    return c.days(centre - timedelta(days=half), stop)


def _rolling(m: re.Match[str], c: _Ctx) -> _Span | None:
    if m.group("n") is None and m.group("pl"):
        return None  # "in past years" names no length
    n = _number(m.group("n"))[0] if m.group("n") else 1
    if n <= 0:
        return None
    return _shift(c.asked, m.group("u").lower(), -n), c.asked, "window"


def _recently(m: re.Match[str], c: _Ctx) -> _Span:
    days = {"days": 7, "weeks": 30, "months": 90, "years": 365}.get((m.group("ru") or "").lower(), 30)
    return c.asked - timedelta(days=days), c.asked, "window"


def _recency(m: re.Match[str], c: _Ctx) -> _Span:
    return None, None, "recency"


def _has(*groups: str) -> Callable[[re.Match[str]], bool]:
    """A match stands on its own (needs no preceding 'in'/'since'...) when one of these groups matched."""
    return lambda m: any(m.group(g) for g in groups)


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    build: Callable[[re.Match[str], _Ctx], _Span | None]
    free: Callable[[re.Match[str]], bool] | None = None  # None: always stands on its own
    trigger: re.Pattern[str] = _TRIGGER  # else the words before it that make it a date


def _rule(
    pattern: str,
    build: Callable[[re.Match[str], _Ctx], _Span | None],
    free: Callable[[re.Match[str]], bool] | None = None,
    trigger: re.Pattern[str] = _TRIGGER,
) -> _Rule:
    return _Rule(re.compile(pattern, re.IGNORECASE), build, free, trigger)


_RULES = (
    _rule(r"\b(?P<y>(?:19|20)\d{2})([-/.])(?P<mo>\d{1,2})\2(?P<d>\d{1,2})\b", _iso),
    _rule(
        rf"\b(?:the\s+)?{_MONTH}\s+(?:the\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?!:\d)(?:,?\s+(?:of\s+)?{_YEAR}\b)?",
        _month_day,
    ),
    _rule(
        rf"\b(?:the\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?!['’]s\b)(?:,?\s+(?:of\s+)?{_YEAR}\b)?",
        _month_day,
    ),
    _rule(rf"\b{_PART}?{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", _month_year),
    _rule(
        rf"\b(?:(?P<rel>last|this|previous)\s+)?{_PART}?{_MONTH}(?!['’]s\b)", _month_alone, _has("rel", "part", "part2")
    ),
    _rule(
        rf"\b(?P<ty>the\s+year\s+)?{_YEAR}\b(?![-/.]\d)(?!['’]?s\b)(?!\s+{_COUNTED}\b)",
        _year_alone,
        _has("ty"),
        _YEAR_TRIGGER,
    ),
    _rule(
        rf"\b(?:(?P<rel>last|previous|this\s+past|past|this)\s+)?(?P<s>spring|summer|autumn|fall|winter)\b"
        rf"(?:,?\s+(?:of\s+)?{_YEAR}\b)?(?!\s+of\s+(?!(?:19|20)\d\d|last\b|this\b))",
        _season_window,
        _has("rel", "y"),
    ),
    _rule(r"\b(?:(?P<rel>last|this\s+past|past|previous|this)\s+)?(?P<wd>" + "|".join(_WEEKDAYS) + r")\b", _weekday),
    _rule(
        r"\b(?:(?P<rel>last|previous|this\s+past|the\s+past|past|this)\s+|(?:over|during|at)\s+the\s+)weekend\b",
        _weekend,
    ),
    _rule(
        r"\b(?:(?:the\s+)?day\s+before\s+yesterday|yesterday|today|tonight|this\s+(?:morning|afternoon|evening)"
        r"|earlier\s+today|last\s+night|the\s+other\s+day)\b",
        _day_word,
    ),
    _rule(
        r"\b(?P<rel>this|last|previous|current|earlier\s+this)\s+(?P<u>week|month|year)\b(?!\s+of\b)(?P<bl>)", _calendar
    ),
    _rule(r"\b(?:the\s+)?(?P<u>week|month|year)\s+before\s+(?P<bl>last)\b(?P<rel>)", _calendar),
    _rule(
        rf"\b(?:(?P<pre>about|around|roughly|approximately|almost|nearly|some|like|maybe|more\s+than|over|less\s+than"
        rf"|under|within)\s+)?(?P<n>{_NUM})\s+{_UNIT}\s+(?:(?P<orso>or\s+so)\s+)?(?:ago|back)\b",
        _ago,
    ),
    _rule(
        rf"\b(?:in|over|during|within|for|throughout)\s+the\s+(?:last|past|previous)\s+(?:(?P<n>{_NUM})\s+)?{_UNIT}\b"
        r"(?!\s+of\b)",
        _rolling,
    ),
    _rule(rf"\b(?:this\s+|the\s+)?past\s+(?:(?P<n>{_NUM})\s+)?{_UNIT}\b(?!\s+of\b)", _rolling),
    _rule(rf"\b(?:the\s+)?(?:last|previous)\s+(?P<n>{_NUM})\s+{_UNIT}\b(?!\s+of\b)", _rolling),
    _rule(r"\b(?:recently|lately|of\s+late|in\s+recent\s+(?P<ru>days|weeks|months|years))\b", _recently),
    _rule(
        r"\b(?:currently|right\s+now|now|nowadays|these\s+days|at\s+the\s+moment|at\s+present|presently|latest"
        r"|most\s+recent(?:ly)?|newest|still|anymore|current|(?:the\s+)?last\s+time)\b",
        _recency,
    ),
)

_YEARLESS = (_month_day, _month_alone, _season_window)


# --- matching ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Hit:
    pos: int
    stop: int
    start: datetime | None
    end: datetime | None
    kind: str
    free: bool
    priority: int
    yearless: bool = False  # a month, day or season named without a year: another phrase may place it
    extended: bool = False  # a leading "in"/"over the" was added: a rule that matched those words itself wins

    @property
    def closed(self) -> bool:
        return self.kind == "window" and self.start is not None and self.end is not None


def _scan(c: _Ctx) -> list[_Hit]:
    """Every rule's matches that parse as dates, marked free when their context makes them a date."""
    hits = []
    for priority, rule in enumerate(_RULES, start=2):
        for m in rule.pattern.finditer(c.text):
            try:
                span = rule.build(m, c)
            except (ValueError, OverflowError):  # 30 February, 9999 years ago
                span = None
            if span is None:
                continue
            free = rule.free is None or rule.free(m) or bool(rule.trigger.search(c.text[: m.start()]))
            groups = m.groupdict()
            yearless = rule.build in _YEARLESS and not groups.get("y") and not groups.get("rel")
            hits.append(_Hit(m.start(), m.end(), *span, free=free, priority=priority, yearless=yearless))
    return hits


def _combine(c: _Ctx, hits: list[_Hit]) -> list[_Hit]:
    """Ranges ("between X and Y") and open windows ("before X", "since X") built on the hits they contain."""
    out = []
    closed = [h for h in hits if h.closed]
    for a in closed:
        opening = _RANGE_START.search(c.text[: a.pos])
        join = _RANGE_JOIN.match(c.text, a.stop) if opening else None
        if opening is None or join is None:
            continue
        ends = [b for b in closed if b.pos == join.end() and b.end and a.start and b.end > a.start]
        if ends:
            b = max(ends, key=lambda h: h.stop)
            out.append(_Hit(opening.start(), b.stop, a.start, b.end, "window", True, 0))
    for h in closed:
        conn = _CONNECTOR.search(c.text[: h.pos])
        if conn is None:
            continue
        word = conn.group("c").lower()
        if word == "before" or word.startswith("prior"):
            start, end, kind = None, h.start, "before"
        elif word == "after":
            start, end, kind = h.end, None, "after"
        elif word.endswith("since"):
            start, end, kind = h.start, None, "after"
        else:  # until / till
            start, end, kind = None, h.end, "before"
        out.append(_Hit(conn.start(), h.stop, start, end, kind, True, 1))
    return out


def _place(best: _Hit, others: list[_Hit]) -> _Hit:
    """Move a year-less date into the year another phrase names ("in May last year", "May 3rd of 2021")."""
    if best.start is None or best.end is None:
        return best
    for other in others:
        if other.start is None or other.end is None:
            continue
        for years in sorted(range(-12, 13), key=abs):  # 0 first: already inside, keep it
            start, end = _shift(best.start, "year", years), _shift(best.end, "year", years)
            if other.start <= start and end <= other.end:
                return replace(best, start=start, end=end)
    return best


def _extend(c: _Ctx, h: _Hit) -> _Hit:
    """Include a leading in/on/during/over the in the phrase ("in May" rather than "May")."""
    lead = _EXTEND.search(c.text[: h.pos])
    if lead is None:
        return h
    return replace(h, pos=lead.start(), extended=True)


def resolve_time(question: str, asked_at: datetime) -> TimeWindow | None:
    """The time window the question's time phrases name, resolved against `asked_at`; None if it has none."""
    if not isinstance(asked_at, datetime) or asked_at.tzinfo is None or asked_at.utcoffset() is None:
        raise ConfigError(
            f"asked_at must be a timezone-aware datetime (e.g. datetime.now(UTC)), got {asked_at!r}: "
            "relative phrases like 'yesterday' depend on the asker's timezone."
        )
    if not isinstance(question, str):
        raise ConfigError(f"question must be a str, got {type(question).__name__}.")
    c = _Ctx(question, asked_at, asked_at.tzinfo, asked_at.date())
    hits = _scan(c)
    pool = _combine(c, hits) + [_extend(c, h) for h in hits if h.free]
    # Overlapping matches: the longest one is the phrase ("the day before yesterday", not "yesterday").
    pool.sort(key=lambda h: (h.pos - h.stop, h.extended, h.priority, h.pos))
    kept: list[_Hit] = []
    for h in pool:
        if all(h.stop <= k.pos or h.pos >= k.stop for k in kept):
            kept.append(h)
    dated = [h for h in kept if h.kind != "recency"]
    if dated:
        best = min(dated, key=lambda h: (not h.closed, h.end - h.start if h.closed else timedelta.max, h.pos))
        if best.yearless and best.closed:
            best = _place(best, [h for h in dated if h.closed and h is not best])
    elif kept:
        best = min(kept, key=lambda h: h.pos)
    else:
        return None
    return TimeWindow(best.start, best.end, question[best.pos : best.stop].strip(), best.kind)


# --- event-relative phrases ---------------------------------------------------------------------------------

# "before I moved", "after my trip to Japan", "since we got the dog": the boundary is an event of the user's
# own history, so only memory can place it (the search finds the event and reads its time). The clause after
# the connector must start like a clause about the asker (I, we, my, our, the, a) and stops at punctuation or
# at the next clause ("..., what did I buy?"). Calendar phrases win: "before May" is resolve_time's.
_ANCHOR = re.compile(
    r"\b(?P<c>before|prior\s+to|after|since|until|till)\s+"
    r"(?P<e>(?:I|we|my|our|the|a|an)\b[^?.!,;:]{2,80}?)"
    r"(?=\s*(?:[?.!,;:]|$|\b(?:what|which|who|where|when|how|did|do|does|was|were|is|are)\b))",
    re.IGNORECASE,
)
# "after a while", "before long", "since the last time": no event to find
_VAGUE = re.compile(
    r"\b(?:while|bit|moment|long|time|times|ago|now|then|days?|weeks?|months?|years?)\s*$", re.IGNORECASE
)
_ANCHOR_DIRECTION = {"before": "before", "prior to": "before", "until": "before", "till": "before",
                     "after": "after", "since": "after"}  # fmt: skip


@dataclass(frozen=True)
class EventAnchor:
    """A time boundary set by an event the question names ("before I moved"): `event` is the text to find in
    memory, `kind` "before" (memories before it) or "after" (memories from it on), `phrase` the words matched."""

    event: str
    kind: str
    phrase: str

    def window(self, moment: datetime) -> TimeWindow:
        """The window once the event is placed at `moment`."""
        if self.kind == "before":
            return TimeWindow(None, moment, self.phrase, "before")
        return TimeWindow(moment, None, self.phrase, "after")


def event_anchor(question: str) -> EventAnchor | None:
    """The event a question's time depends on ("What did I buy before I moved?" -> before "I moved"), or None;
    a calendar phrase resolve_time reads ("before May") is not an event."""
    if not isinstance(question, str):
        raise ConfigError(f"question must be a str, got {type(question).__name__}.")
    for m in _ANCHOR.finditer(question):
        event = m.group("e").strip()
        probe = f"{m.group('c')} {event}"
        if resolve_time(probe, datetime(2000, 1, 1, tzinfo=UTC)) is not None:
            continue  # a date ("before the summer", "after the 3rd of May"): not an event
        if len(event.split()) < 2 or _VAGUE.search(event):
            continue
        connector = " ".join(m.group("c").lower().split())
        return EventAnchor(event, _ANCHOR_DIRECTION[connector], m.group(0).strip())
    return None
