"""Generate memlab-synth: users of 5 to 2,000 events talking to an assistant, and paraphrased questions.

Per user (all draws from one `random.Random` seeded from the set's seed, so a seed gives identical output):

1. sizes are log-uniform over [min_events, max_events]; the events are cut into sessions of 4-20 turns
   (user/model alternating), days to weeks apart;
2. a profile of registry facts (`data/facts_*.yaml`), some of which change 1-3 times, plus episodes
   (a trip shortlist, gift ideas) whose items come up in different sessions;
3. the statements of one fact (or episode) go into different sessions, in time order, and a session's
   first statement sets its topic; the rest of every session, and every session without a statement, is
   distractor talk, mostly on the user's own topics (`data/chatter_*.yaml`);
4. questions are drawn from candidates built from what was said, with `relevant` = the events that state
   the asked value (the generator records them while rendering, it never string-matches);
5. every user turn that states a fact also yields its gold fact candidates (`UserHistory.gold_candidates`,
   session id -> candidates): the value it states and, when a change names the value it replaces, a retraction
   of that one, each quoting the sentence it is in. `LabelledExtractor.from_set` replays them: the upper bound
   of fact memory on this set. Recording them draws nothing from the random generator.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache

from memlab.facts.registry import default_registry
from memlab.facts.types import Candidate
from memlab.lab.datasets.model import Dataset, Question, UserHistory
from memlab.lab.datasets.synth.banks import (
    ASIDES,
    BANKS,
    CLOSERS,
    CROSS_QUESTIONS,
    EPISODES,
    FIRST_PREFIXES,
    MONTHS,
    OPENERS,
    PREFIXES,
    SWITCHES,
)
from memlab.lab.datasets.synth.specs import EpisodeSpec, FactSpec, Topic, fact_specs, topics
from memlab.types import Event, Session

FACTS: tuple[FactSpec, ...] = tuple(
    spec for name in ("facts_life", "facts_goals", "facts_work", "facts_leisure") for spec in fact_specs(name)
)
TOPICS: dict[str, Topic] = {t.name: t for name in ("chatter_life", "chatter_work") for t in topics(name)}
QTYPES = ("single_fact", "knowledge_update", "multi_session", "temporal", "no_answer", "near_miss")
NO_ANSWER = "not in memory"  # the `answer` of every no_answer question
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
MIN_TURNS, MAX_TURNS = 4, 20
_SLOT = re.compile(r"\{(\w+)\}")
_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
PARAPHRASE_MAX = 0.5  # a question shares less than this share of its words with the events that answer it


def word_set(text: str) -> set[str]:
    """The lower-cased word tokens of `text` (what the paraphrase check compares)."""
    return set(_WORD.findall(text.lower()))


def join_and(parts: list[str]) -> str:
    """'A', 'A and B', 'A, B and C': the answer form of multi-part questions."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def answer_parts(question: Question) -> list[str]:
    """The parts a multi_session or temporal answer is made of ('A, then B' / 'A, B and C'); else the answer."""
    answer = question.answer or ""
    if question.qtype in ("multi_session", "temporal"):
        return [p for p in re.split(r", then |, | and ", answer) if p]
    return [answer]


@cache
def value_pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    """One case-insensitive, whole-word regex matching any of `values`."""
    alternatives = "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])", re.IGNORECASE)


def mentions(text: str, *values: str) -> bool:
    """Whether `text` contains any of `values` as a whole word or phrase (case-insensitive)."""
    return bool(value_pattern(tuple(values)).search(text))


def sentence_span(text: str, anchor: str, *near: str) -> str:
    """The whole sentences of `text` that hold the first whole-word `anchor` and, for each of `near`, its
    occurrence closest to the anchor: a quote that is an exact substring of `text` (all of it if no anchor)."""
    found = value_pattern((anchor,)).search(text)
    if found is None:
        return text.strip()
    start, end = found.span()
    for word in near:
        spots = [m.span() for m in value_pattern((word,)).finditer(text)]
        if spots:
            a, b = min(spots, key=lambda span: abs(span[0] - found.start()))
            start, end = min(start, a), max(end, b)
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    first = max((e for e in ends if e <= start), default=0)
    last = min((e for e in ends if e >= end), default=len(text))
    return text[first:last].strip()


def gold_value(spec: FactSpec, value: str, extra: str) -> str:
    """The candidate value of a fact as the registry wants it: normalised, and for `pet` the species named
    ("dog named luna", the registry's form) rather than the bare name the questions answer with."""
    raw = f"{extra} named {value}" if spec.predicate == "pet" and extra else value
    return default_registry().normalize(spec.predicate, raw)


@dataclass
class _Thread:
    """One fact (its values over time) or one episode (its items), and the events that state each value."""

    spec: FactSpec | EpisodeSpec
    extra: str
    values: list[str]
    third: str = ""  # episodes: the occasion in the third person
    sessions: list[int] = field(default_factory=list)
    stated: dict[str, list[str]] = field(default_factory=dict)  # value -> ids of events stating it
    dated: dict[str, tuple[str, str]] = field(default_factory=dict)  # value -> (event id, date phrase)

    @property
    def is_fact(self) -> bool:
        return isinstance(self.spec, FactSpec)

    def templates(self, index: int) -> tuple[tuple[str, str], ...]:
        if isinstance(self.spec, FactSpec):
            return self.spec.state if index == 0 else self.spec.change
        return self.spec.first if index == 0 else self.spec.more

    def relevant(self, *values: str) -> list[str]:
        return list(dict.fromkeys(e for v in values for e in self.stated.get(v, ())))


@dataclass
class _Candidate:
    qtype: str
    text: str
    answer: str
    relevant: list[str]
    threads: tuple[int, ...]
    fact_key: str | None = None


def _session_lengths(rng: random.Random, size: int) -> list[int]:
    low, high = math.ceil(size / MAX_TURNS), max(1, size // MIN_TURNS)
    count = min(high, max(low, round(size / rng.uniform(6, 14)), 1))
    lengths = [MIN_TURNS] * count
    weights = list(itertools.accumulate(rng.random() + 0.25 for _ in range(count)))
    extra = size - MIN_TURNS * count
    while extra > 0:
        i = rng.choices(range(count), cum_weights=weights)[0]
        if lengths[i] < MAX_TURNS:
            lengths[i] += 1
            extra -= 1
    return lengths


class _User:
    """Builds one user's sessions and questions."""

    def __init__(self, rng: random.Random, app_name: str, user_id: str, size: int) -> None:
        self.rng, self.app_name, self.user_id, self.size = rng, app_name, user_id, size
        self.lengths = _session_lengths(rng, size)
        gap = min(30.0, max(1.5, 540 / len(self.lengths)))
        day, self.starts = rng.randint(0, 300), []
        for i in range(len(self.lengths)):
            day += max(1, round(gap * rng.uniform(0.3, 1.7))) if i else 0
            self.starts.append(EPOCH + timedelta(days=day, hours=rng.randint(7, 21), minutes=rng.randint(0, 59)))
        self.threads: list[_Thread] = []
        self.reserved: set[str] = set()  # date phrases in use (answers of temporal questions)
        self.excluded: set[str] = set()  # episode items: distractors must not mention them
        self.pools: dict[str, list[str]] = {}
        self.session_of: dict[str, str] = {}
        self.texts: dict[str, str] = {}
        self.by_session: dict[int, list[tuple[_Thread, int]]] = {}
        self.topics: list[str] = []
        self.prefixes_used: set[str] = set()
        self.sessions: list[Session] = []
        self.gold: dict[str, list[Candidate]] = {}  # session id -> the fact candidates its user turns state

    # -- planning -------------------------------------------------------------------------------------

    def plan(self) -> None:
        rng, n_sessions = self.rng, len(self.lengths)
        room = [max(1, ((n + 1) // 2) * 2 // 3) for n in self.lengths]
        n_facts = min(len(FACTS), 2 + int(1.3 * math.log2(self.size / 5)), sum(room))
        profile = rng.sample(FACTS, n_facts)
        changing: set[str] = set()
        if n_sessions >= 2:
            changeable = [s for s in profile if s.changeable]
            k = min(len(changeable), rng.randint(1, 1 + min(3, n_sessions // 8)))
            changing = {s.predicate for s in rng.sample(changeable, k)}
        for spec in profile:
            changes = min(rng.choice((1, 1, 2, 2, 3)), n_sessions - 1) if spec.predicate in changing else 0
            pool = rng.choice([g for g in spec.groups if len(g) > changes]) if spec.groups else spec.values
            values = rng.sample(pool, 1 + changes)
            self.threads.append(_Thread(spec, rng.choice(spec.extras), values))
            if spec.predicate == "birthday":
                self.reserved.add(values[0])
        if n_sessions >= 3:
            for spec in rng.sample(EPISODES, rng.choice((0, 1, 1, 2) if n_sessions < 20 else (1, 2))):
                first, third = rng.choice(spec.extras)
                items = rng.sample(BANKS[spec.bank], min(rng.choice((2, 2, 3)), n_sessions))
                self.threads.append(_Thread(spec, first, items, third=third))
                self.excluded.update(items)
        placed = []
        for thread in sorted(self.threads, key=lambda t: -len(t.values)):
            free = [i for i in range(n_sessions) if room[i] > 0]
            if len(free) < (1 if thread.is_fact else 2):
                continue
            thread.values = thread.values[: len(free)]
            thread.sessions = sorted(rng.sample(free, len(thread.values)))
            for i in thread.sessions:
                room[i] -= 1
            placed.append(thread)
        kept = {id(t) for t in placed}
        self.threads = [t for t in self.threads if id(t) in kept]  # keep the profile order
        for thread in self.threads:
            for index, i in enumerate(thread.sessions):
                self.by_session.setdefault(i, []).append((thread, index))
        own_topics = [t.spec.topic for t in self.threads] or sorted(TOPICS)
        for i in range(n_sessions):
            if i in self.by_session:
                self.topics.append(self.by_session[i][0][0].spec.topic)
            else:
                self.topics.append(rng.choice(own_topics) if rng.random() < 0.7 else rng.choice(sorted(TOPICS)))

    # -- rendering ------------------------------------------------------------------------------------

    def _date(self, base: datetime, sign: int) -> str:
        for _ in range(100):
            day = base + timedelta(days=sign * self.rng.randint(3, 45))
            phrase = f"{day.day} {MONTHS[day.month - 1]}"
            if phrase not in self.reserved:
                self.reserved.add(phrase)
                return phrase
        raise RuntimeError("no free date phrase")  # pragma: no cover - 43 days each way, few dates per user

    def _fill(self, name: str) -> str:
        if name == "date":  # distractor dates use another form than fact dates, so they never collide
            day, month = self.rng.randint(1, 28), self.rng.choice(MONTHS)
            suffix = "th" if 10 < day < 14 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
            return f"the {day}{suffix} of {month}"
        if name not in self.pools:
            self.pools[name] = [v for v in BANKS[name] if v not in self.excluded]
        return self.rng.choice(self.pools[name])

    def _prefix(self, options: tuple[str, ...]) -> str:
        """An opening phrase not yet used in this session (if one is left)."""
        prefix = self.rng.choice([p for p in options if p not in self.prefixes_used] or list(options))
        self.prefixes_used.add(prefix)
        return prefix

    def _chatter(self, topic: Topic, used: set[int], first: bool) -> tuple[str, str]:
        rng = self.rng
        if rng.random() < (0.15 if first else 0.05):
            user, replies = rng.choice(OPENERS if first else ASIDES)
            return user, rng.choice(replies)
        choices = [i for i in range(len(topic.pairs)) if i not in used] or list(range(len(topic.pairs)))
        index = rng.choice(choices)
        used.add(index)
        user_t, replies = topic.pairs[index]
        reply_t = rng.choice(replies)
        fills = {name: self._fill(name) for name in dict.fromkeys(_SLOT.findall(user_t + reply_t))}
        user = user_t.format(**fills)
        if rng.random() < 0.3:
            user = self._prefix(FIRST_PREFIXES if first else PREFIXES) + user
        return user, reply_t.format(**fills)

    def _mention(
        self, thread: _Thread, index: int, start: datetime, first: bool, switch: bool
    ) -> tuple[str, str, list[str], list[str], str, str]:
        """(user text, reply text, values the user turn states, values the reply states, date phrase or '', the
        user text without its opening phrase)."""
        rng = self.rng
        user_t, reply_t = rng.choice(thread.templates(index))
        value = thread.values[index]
        old = thread.values[index - 1] if index and thread.is_fact else ""
        slots = {"v": value, "old": old, "x": thread.extra, "past": "", "future": ""}
        date = ""
        if "{past}" in user_t:
            date = slots["past"] = self._date(start, -1)
        elif "{future}" in user_t:
            date = slots["future"] = self._date(start, 1)
        body = user = user_t.format(**slots)
        if switch:
            user = self._prefix(SWITCHES) + user
        elif rng.random() < 0.15:
            user = self._prefix(FIRST_PREFIXES if first else PREFIXES) + user
        said = [value] + ([old] if old and "{old}" in user_t else [])
        echoed = ([value] if "{v}" in reply_t else []) + ([old] if old and "{old}" in reply_t else [])
        return user, reply_t.format(**slots), said, echoed, date, body

    def _gold(self, thread: _Thread, index: int, body: str, said: list[str], event: Event) -> list[Candidate]:
        """The fact candidates of a user turn that states `said` (from `_mention`): its value, and a retraction of
        the value it replaces when it names that one (every change template that names {old} drops it: "we left
        Leeds and moved to Porto"), quoting the sentences that name both. Model replies only echo the user, so (as
        in the fact fixtures) they yield none."""
        spec = thread.spec
        if not isinstance(spec, FactSpec):
            return []  # episodes (a trip shortlist, gift ideas) are not registry facts
        subject = spec.subject.format(x=thread.extra)
        near = (thread.extra,) if thread.extra and ("{x}" in spec.subject or spec.predicate == "pet") else ()
        value = thread.values[index]
        out = []
        for v in said:
            retracted = v != value
            quote = sentence_span(body, v, *near, *([value] if retracted else []))
            out.append(Candidate(subject, spec.predicate, gold_value(spec, v, thread.extra), quote, basis="stated",
                                 negated=retracted, event_id=event.id, event_time=event.timestamp,
                                 session_id=self.session_of[event.id]))  # fmt: skip
        return out

    def render(self) -> None:
        rng = self.rng
        for i, (length, start) in enumerate(zip(self.lengths, self.starts, strict=True)):
            sid = f"{self.user_id}-s{i + 1}"
            mentions_here = self.by_session.get(i, [])
            at = dict(zip(rng.sample(range((length + 1) // 2), len(mentions_here)), mentions_here, strict=True))
            topic, used = TOPICS[self.topics[i]], set()
            self.prefixes_used.clear()
            events: list[Event] = []
            t, reply, echo = start, "", None
            for k in range(length):
                eid = f"{sid}-e{k + 1}"
                self.session_of[eid] = sid
                if k % 2 == 0:
                    t += timedelta(seconds=rng.randint(20, 240)) if k else timedelta(0)
                    echo = None
                    if k // 2 in at:
                        thread, index = at[k // 2]
                        switch = k > 0 and thread.spec.topic != topic.name
                        text, reply, said, echoed, date, body = self._mention(thread, index, start, k == 0, switch)
                        for value in said:
                            thread.stated.setdefault(value, []).append(eid)
                        if date:
                            thread.dated[thread.values[index]] = (eid, date)
                        echo = (thread, echoed)
                    elif k == length - 1 and rng.random() < 0.6:
                        text = rng.choice(CLOSERS)
                    else:
                        text, reply = self._chatter(topic, used, first=k == 0)
                    events.append(Event(id=eid, author="user", timestamp=t, text=text))
                    if k // 2 in at:
                        gold = self._gold(thread, index, body, said, events[-1])
                        if gold:
                            self.gold.setdefault(sid, []).extend(gold)
                else:
                    t += timedelta(seconds=rng.randint(4, 40))
                    events.append(Event(id=eid, author="model", timestamp=t, text=reply))
                    if echo is not None:
                        for value in echo[1]:
                            echo[0].stated.setdefault(value, []).append(eid)
            self.texts.update((e.id, e.text or "") for e in events)
            self.sessions.append(Session(app_name=self.app_name, user_id=self.user_id, id=sid, events=events))

    # -- questions ------------------------------------------------------------------------------------

    def _phrase(self, templates: tuple[str, ...], relevant: list[str], **slots: str) -> str:
        """One of `templates`, filled; only phrasings sharing < PARAPHRASE_MAX of their words with the relevant
        events are drawn (the least overlapping one if none is below it)."""
        stored = set().union(*(word_set(self.texts[e]) for e in relevant))
        scored = []
        for template in templates:
            text = template.format(**slots)
            text = text[0].upper() + text[1:]
            words = word_set(text)
            scored.append((len(words & stored) / len(words), text))
        good = [text for share, text in scored if share < PARAPHRASE_MAX]
        return self.rng.choice(good) if good else min(scored)[1]

    def _candidates(self) -> dict[str, list[_Candidate]]:
        rng, out = self.rng, {q: [] for q in QTYPES[:4]}
        facts = [(n, t) for n, t in enumerate(self.threads) if t.is_fact]
        for n, th in facts:
            spec, values, current, x = th.spec, th.values, th.values[-1], th.extra
            assert isinstance(spec, FactSpec)
            key = f"{spec.subject.format(x=x)}/{spec.predicate}"
            now = th.relevant(current)
            if len(values) == 1:
                out["single_fact"].append(
                    _Candidate("single_fact", self._phrase(spec.ask, now, x=x), current, now, (n,), key)
                )
            else:
                ask = self._phrase(spec.ask, now, x=x)
                out["knowledge_update"].append(_Candidate("knowledge_update", ask, current, now, (n,), key))
                then = th.relevant(values[-2])
                before = self._phrase(spec.before, then, x=x, v=current)
                out["temporal"].append(_Candidate("temporal", before, values[-2], then, (n,), key))
                every = th.relevant(*values)
                order = self._phrase(spec.order, every, x=x)
                out["temporal"].append(_Candidate("temporal", order, ", then ".join(values), every, (n,), key))
                history = self._phrase(spec.history, every, x=x)
                out["multi_session"].append(_Candidate("multi_session", history, join_and(values), every, (n,), key))
            for value, (eid, date) in th.dated.items():
                if spec.when:
                    when = self._phrase(spec.when, [eid], x=x, v=value)
                    out["temporal"].append(_Candidate("temporal", when, date, [eid], (n,), key))
        for n, th in enumerate(self.threads):
            if isinstance(th.spec, EpisodeSpec):
                every = th.relevant(*th.values)
                text = self._phrase(th.spec.ask, every, y=th.third)
                out["multi_session"].append(_Candidate("multi_session", text, join_and(th.values), every, (n,)))
        pairs = [(a, b) for a, b in itertools.combinations(facts, 2) if a[1].sessions[-1] != b[1].sessions[-1]]
        for (na, a), (nb, b) in rng.sample(pairs, min(3, len(pairs))):
            spec_a, spec_b = a.spec, b.spec
            assert isinstance(spec_a, FactSpec) and isinstance(spec_b, FactSpec)
            relevant = a.relevant(a.values[-1]) + b.relevant(b.values[-1])
            about_a, about_b = spec_a.about.format(x=a.extra), spec_b.about.format(x=b.extra)
            text = self._phrase(CROSS_QUESTIONS, relevant, a=about_a, b=about_b)
            answer = f"{a.values[-1]} and {b.values[-1]}"
            out["multi_session"].append(_Candidate("multi_session", text, answer, relevant, (na, nb)))
        return out

    def questions(self, near_miss: int = 1) -> list[Question]:
        rng = self.rng
        target = 6 + round(1.5 * math.log10(self.size / 5))
        n_none = 1 if self.size < 300 else 2
        candidates = self._candidates()
        order = list(candidates)
        rng.shuffle(order)
        for pool in candidates.values():
            rng.shuffle(pool)
        per_thread: Counter[int] = Counter()
        picked: list[_Candidate] = []
        while len(picked) < target - n_none and any(candidates.values()):
            for qtype in order:
                pool = candidates[qtype]
                while pool and len(picked) < target - n_none:
                    cand = pool.pop()
                    if all(per_thread[n] < 2 for n in cand.threads):
                        picked.append(cand)
                        per_thread.update(cand.threads)
                        break
        picked.extend(self._no_answer(n_none))
        rng.shuffle(picked)
        out = [self._question(n, cand) for n, cand in enumerate(picked)]
        # near misses draw last, so the questions above are the same whether or not they are asked
        out += [self._question(len(out) + n, cand) for n, cand in enumerate(self._near_miss(near_miss))]
        return out

    def _question(self, n: int, cand: _Candidate) -> Question:
        asked = self.sessions[-1].events[-1].timestamp + timedelta(days=self.rng.randint(1, 30),
                                                                   hours=self.rng.randint(0, 23))  # fmt: skip
        return Question(
            id=f"{self.user_id}-q{n + 1}",
            app_name=self.app_name,
            user_id=self.user_id,
            text=cand.text,
            relevant=tuple(cand.relevant),
            asked_at=asked,
            qtype=cand.qtype,
            fact_key=cand.fact_key,
            relevant_sessions=tuple(dict.fromkeys(self.session_of[e] for e in cand.relevant)),
            answer=cand.answer,
        )

    def _near_miss(self, count: int) -> list[_Candidate]:
        """No-answer questions about a fact the user did state, asked of another of its extras: a user who talks
        about their dog Rex is asked what their rabbit is called. Real abstention questions are often such near
        misses, and memory then holds a close, same-kind statement, so a distance cut-off cannot refuse them;
        an answerability model needs them to learn from."""
        rng = self.rng
        options = [(n, th) for n, th in enumerate(self.threads)
                   if isinstance(th.spec, FactSpec) and th.spec.near_miss and len(th.spec.extras) > 1]  # fmt: skip
        rng.shuffle(options)
        out = []
        for n, th in options[:count]:
            spec = th.spec
            assert isinstance(spec, FactSpec)
            other = rng.choice([x for x in spec.extras if x != th.extra])
            key = f"{spec.subject.format(x=other)}/{spec.predicate}"
            out.append(_Candidate("near_miss", rng.choice(spec.ask).format(x=other), NO_ANSWER, [], (n,), key))
        return out

    def _no_answer(self, count: int) -> list[_Candidate]:
        """Questions about facts the user never stated, on the user's topics first; no event names any value."""
        rng = self.rng
        present = {t.spec.predicate for t in self.threads if isinstance(t.spec, FactSpec)}
        options = [s for s in FACTS if s.no_answer and s.predicate not in present]
        rng.shuffle(options)
        topics = set(self.topics)
        options.sort(key=lambda s: s.topic not in topics)
        blob = "\n".join(e.text or "" for s in self.sessions for e in s.events)
        out = []
        for spec in options:
            if len(out) == count:
                break
            if value_pattern(spec.values).search(blob):
                continue
            extra = rng.choice(spec.extras)
            key = f"{spec.subject.format(x=extra)}/{spec.predicate}"
            out.append(_Candidate("no_answer", rng.choice(spec.ask).format(x=extra), NO_ANSWER, [], (), key))
        return out

    def history(self, seed: int) -> UserHistory:
        profile = []
        for th in self.threads:
            name = th.spec.predicate if isinstance(th.spec, FactSpec) else th.spec.kind
            extra = f" ({th.third or th.extra})" if th.extra else ""
            joiner = " -> " if th.is_fact else ", "
            profile.append(f"{name}{extra}: {joiner.join(th.values)}")
        description = f"{self.size} events in {len(self.sessions)} sessions. " + "; ".join(profile)
        return UserHistory(
            app_name=self.app_name,
            user_id=self.user_id,
            sessions=self.sessions,
            description=description,
            source=f"memlab.lab.datasets.synth seed={seed}",
            gold_candidates=self.gold,
        )


def user_sizes(rng: random.Random, users: int, min_events: int, max_events: int) -> list[int]:
    """Log-uniform sizes, one per stratum of the log range (so every part of it is covered), ends included."""
    low, high = math.log(min_events), math.log(max_events)
    sizes = [round(math.exp(low + (i + rng.random()) / users * (high - low))) for i in range(users)]
    sizes[0], sizes[-1] = min_events, max_events
    sizes = [min(max_events, max(min_events, s)) for s in sizes]
    rng.shuffle(sizes)
    return sizes


def generate(
    seed: int = 0,
    *,
    users: int = 64,
    min_events: int = 5,
    max_events: int = 2000,
    app_name: str = "memlab-synth",
    near_miss: int = 1,
) -> Dataset:
    """The memlab-synth labelled set for `seed`: same seed, same users, sessions, events and questions.
    `near_miss` is the most near-miss no-answer questions per user (0: none; the other questions do not
    change with it)."""
    if near_miss < 0:
        raise ValueError(f"near_miss must be >= 0, got {near_miss}")
    if users < 2:
        raise ValueError(f"users must be >= 2 (the smallest and the largest size are both included), got {users}")
    if not MIN_TURNS <= min_events <= max_events:
        raise ValueError(f"need {MIN_TURNS} <= min_events <= max_events, got {min_events} and {max_events}")
    rng = random.Random(seed)
    histories, questions = [], []
    for i, size in enumerate(user_sizes(rng, users, min_events, max_events)):
        user = _User(random.Random(rng.getrandbits(64)), app_name, f"u{i:03d}", size)
        user.plan()
        user.render()
        questions.extend(user.questions(near_miss))
        histories.append(user.history(seed))
    return Dataset(name=f"memlab-synth-seed{seed}", users=histories, questions=questions)
