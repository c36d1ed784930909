"""A deterministic, model-free extractor: regular expressions over plain English, one small function per family.

It reads each event sentence by sentence and skips questions, hypotheticals ("if I were vegan"), hedges in the
user's own words and instruction-like text ("remember that you must ..."). User text gives `stated` candidates;
agent text gives `inferred` ones from second-person phrasing ("you seem to like spicy food", "you're on the
annual plan"), and tool text from the same phrasing or `key=value` pairs. When a sentence is ambiguous it
emits nothing. The word lists are data (`rules_words.yaml`); the rule table and the helper expressions built from them
live in `rules_patterns.py`; this module turns their matches into candidates.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import memlab.facts.extractors.rules_patterns as P
from memlab.facts.extractors.base import basis_for
from memlab.facts.registry import PredicateRegistry
from memlab.facts.types import Candidate
from memlab.safety.pattern_gates import Gates, fold, required_words
from memlab.types import Event

_FLAGS = re.IGNORECASE


@dataclass(frozen=True)
class _Rule:
    family: str
    predicate: str
    negated: bool
    user_only: bool
    personal: bool  # the template says "I"/"you", so agent text may use its second-person form
    cue: bool  # only counts when the context talks about the topic (work, deliveries)
    first: re.Pattern[str]
    second: re.Pattern[str]


@functools.cache
def _rules() -> tuple[_Rule, ...]:
    """The compiled rules, on the first extraction: compiling their regexes takes about a second of CPU, which
    every process importing memlab (a CLI call, a notebook kernel, a writer process) paid whether it extracted
    facts or not."""
    rules = []
    for family, rows in P.TEMPLATES.items():
        for predicate, flags, template in rows:
            first, second = P.expand(template, "first"), P.expand(template, "second")
            negated, user_only, cue = ("n" in flags), ("u" in flags), ("c" in flags)
            compiled = re.compile(first, _FLAGS), re.compile(second, _FLAGS)
            rules.append(_Rule(family, predicate, negated, user_only, first != second, cue, *compiled))
    return tuple(rules)


@functools.cache
def _gates() -> tuple[Gates, Gates]:
    """Which rules may match a user's sentence, and an agent's (second-person templates): derived from the
    rules' regexes on the first extraction, not at import (`import memlab` imports this module)."""
    return Gates([required_words(r.first) for r in _rules()]), Gates([required_words(r.second) for r in _rules()])


_NAME_WORD = re.compile(P.NAME)
_SPLIT_LIST = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|\band\b|\bor\b|&)\s*", _FLAGS)
_LEADING = re.compile(r"^(?:(?:the|a|an|my|our|your|some)\s+)+", _FLAGS)
_SEVERITY = re.compile(r"^(?:severe|mild|bad|serious|life-threatening)\s+", _FLAGS)
_FOOD_ONLY = re.compile(r"^" + P.FOOD + r"$", _FLAGS)
_PRODUCT_IN = re.compile(r"\b(?:the|an?)\s+(?P<p>" + P.PRODUCT + ")", _FLAGS)
_ACCOUNT_IN = re.compile(P.ACCOUNT, _FLAGS)
_PLANG_IN = re.compile(P.PLANG, _FLAGS)
_LANG_IN = re.compile(P.LANG, _FLAGS)
_PLACE_SETS = {p.lower() for p in P.CITIES + P.COUNTRIES}
_COUNTRY_SET = {c.lower() for c in P.COUNTRIES} | {p.lower() for p in P.PLACES_CASED if p.startswith("the ")}


class _Hit(NamedTuple):
    subject: str
    predicate: str
    raw: str
    negated: bool
    start: int
    end: int


@dataclass(frozen=True)
class _Val:
    predicate: str
    raw: str
    subject: str | None = None
    span: tuple[int, int] | None = None  # relative to the sentence; defaults to the whole match
    negated: bool | None = None


@dataclass
class _Context:
    """What the extractor knows about the session so far: names of relatives and who he/she refer to."""

    names: dict[str, str]
    registry: PredicateRegistry
    current_keys: Sequence[tuple[str, str]]
    referents: dict[str, str | None] = field(default_factory=lambda: {"he": None, "she": None})
    sentence: str = ""
    event_text: str = ""
    prev_text: str = ""


def _value(m: re.Match[str]) -> str:
    for group in ("v", "v2", "v3", "v4"):
        if group in m.re.groupindex and m.group(group):
            return m.group(group)
    return ""


def _group(m: re.Match[str], name: str) -> str | None:
    return m.group(name) if name in m.re.groupindex else None


def _items(raw: str, max_words: int = 3) -> list[str]:
    out = []
    for item in _SPLIT_LIST.split(raw):
        item = P.TRAILING.sub("", _LEADING.sub("", item.strip()))
        if item and len(item.split()) <= max_words:
            out.append(item)
    return out


def _name_ok(name: str | None) -> bool:
    return bool(name) and name.lower() not in P.NOT_NAMES


# ---- one value function per family: match -> values (predicate, raw text) ----


def _place_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    raw = re.sub(r"^the\s+", "", _value(m).strip(), flags=_FLAGS)
    low = raw.lower()
    if low in P.NOT_NAMES or low.split()[0] in P.NOT_NAMES or low in P.BRAND_SET:
        return []
    out = [_Val("home_country" if low in _COUNTRY_SET else rule.predicate, raw)]
    country = _group(m, "country")
    if country and low not in _COUNTRY_SET:
        out.append(_Val("home_country", country))
    return out


def _timezone_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    raw = re.sub(r"\s+time(?:\s*zone)?$", "", _value(m).strip(), flags=_FLAGS)
    low = raw.lower()
    if low in P.CITY_TZ:
        return [_Val(rule.predicate, P.CITY_TZ[low])]
    raw = P.TZ_WORDS.get(low, raw)
    return [_Val(rule.predicate, P.TZ_ABBR_EXTRA.get(raw.upper(), raw))]


def _list_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    """Allergens, languages: a list ("peanuts and tree nuts") gives one value each."""
    if rule.family == "language":
        return [_Val(rule.predicate, x.group(0)) for x in _LANG_IN.finditer(_value(m))]
    local = P.LOCAL_VALUES.get(rule.predicate, {})
    values = [_SEVERITY.sub("", x) for x in _items(_value(m))]
    return [_Val(rule.predicate, local.get(v.lower(), v)) for v in values if v.lower() not in P.NOT_NAMES]


def _food_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    if rule.predicate == "likes_spicy":
        negative = re.search(r"don['’]t|do\s+not|can['’]t|cannot|nothing|not\s+too", m.group(0), _FLAGS)
        return [
            _Val("likes_spicy", P.LOCAL_VALUES["likes_spicy"].get(_value(m).lower(), "false" if negative else "true"))
        ]
    out = []
    for item in _items(_value(m)):
        if item.lower().startswith("spicy"):
            out.append(_Val("likes_spicy", "false" if not rule.negated else "true", negated=False))
        elif _FOOD_ONLY.match(item):
            out.append(_Val(rule.predicate, item))
    return out


def _health_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    raw = _SEVERITY.sub("", _value(m).strip())
    if rule.predicate == "medical_condition" and raw.lower().split()[0] in P.NOT_NAMES:
        return []
    return [_Val(rule.predicate, P.LOCAL_VALUES.get(rule.predicate, {}).get(raw.lower(), raw))]


def _work_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    raw = _value(m).strip()
    if rule.predicate == "job_title":
        return [_Val(rule.predicate, raw)]
    low = raw.lower()
    if low in P.NOT_NAMES or low.split()[0] in P.NOT_NAMES or low in _PLACE_SETS or low in P.NOT_EMPLOYERS:
        return []
    elsewhere = ctx.sentence.replace(m.group(0), " ")
    if rule.cue and not P.JOB_CUE.search(elsewhere) and "now" not in ctx.sentence[m.end() :][:6]:
        return []  # "I'm at Wipro" is a job only when the sentence talks about work
    return [_Val(rule.predicate, raw)]


def _family_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    raw = _value(m).strip()
    if rule.predicate == "number_of_children":
        low = raw.lower()
        if low in {"kids", "children"}:
            return [_Val(rule.predicate, "0")]
        if low in {"a", "an"} and not re.search(r"\b(?:kid|child)\b", m.group(0), _FLAGS):
            return []
        return [_Val(rule.predicate, P.NUMBER_WORDS.get(low, raw))]
    names = [n for n in _SPLIT_LIST.split(raw) if n]
    return [_Val(rule.predicate, n) for n in names if _name_ok(n)]


def _pet_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    species = _value(m).lower()
    for suffix, repl in P.PLURAL_ENDINGS.items():
        base = species[: -len(suffix)] + repl if species.endswith(suffix) else None
        if base and re.fullmatch(P.SPECIES_RE, base, _FLAGS) and species not in P.SAME_PLURAL:
            species = base
            break
    species = ctx.registry.normalize("pet", species)
    name = _group(m, "pname")
    return [_Val("pet", f"{species} named {name}" if _name_ok(name) else species)]


def _product_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    if _group(m, "listed"):  # "your order history shows the Aura 7 and an InkPage Note 10"
        found = _PRODUCT_IN.finditer(m.group("listed"))
        offset = m.start("listed")  # spans are relative to the sentence
        return [
            _Val(rule.predicate, x["p"], span=(offset + x.start("p"), offset + x.end("p")))
            for x in found
            if _product_ok(x["p"])
        ]
    raw = _value(m).strip()
    if not rule.negated and P.GIFT.match(ctx.sentence[m.end() :]):
        return []
    return [_Val(rule.predicate, raw)] if _product_ok(raw) else []


def _product_ok(name: str) -> bool:
    words = name.split()
    first = words[0].lower()
    if first in P.NOT_NAMES or first in _PLACE_SETS or not re.fullmatch(r"[A-Za-z\-]{2,}", words[0]):
        return False
    if name.lower() in {g.lower() for g in P.GENERIC_PRODUCTS}:
        return True
    return first in P.BRAND_SET or " ".join(words[:2]).lower() in P.BRAND_SET or any(c.isdigit() for c in name)


def _plan_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    raw = _value(m).strip()
    after = m.group(0)[m.end("v") - m.start() :]
    if raw.lower() not in P.PLANS_TIME and not re.search(P.PLAN_NOUN, after, _FLAGS):
        return []  # "I switched to vegan" is a diet, not a plan
    return [_Val(rule.predicate, raw)]


def _money_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    raw = re.sub(r"\s+", " ", _value(m).strip())
    if rule.predicate == "bank_account_type":
        return _account_values(m, rule, ctx)
    if rule.predicate == "budget" and _group(m, "verb") == "do" and "budget" not in ctx.sentence.lower():
        return []
    if rule.predicate == "monthly_income":
        kind = (_group(m, "kind") or "").lower()
        if "take" not in kind and "monthly" not in m.group(0).lower() and not _group(m, "per") and kind:
            return []
    if rule.predicate == "savings_goal":
        raw = P.TRAILING.sub("", raw)
    return [_Val(rule.predicate, raw)]


def _account_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    out = []
    for x in _ACCOUNT_IN.finditer(_value(m)):
        low = re.sub(r"\s+", " ", x.group(0).lower())
        if re.search(r"\bisa$", low):
            low = "isa"
        elif low in P.ACCOUNT_TYPES:
            low = P.ACCOUNT_TYPES[low]
        elif low.startswith("401"):
            low = "401(k)"
        out.append(_Val(rule.predicate, low))
    if out and not rule.negated:
        number = P.ACCOUNT_NUMBER.match(ctx.sentence[m.end() :])
        if number:
            start = m.start("v") + _value(m).rfind(_ACCOUNT_IN.findall(_value(m))[-1])
            subject = f"account:{number.group('n')}"
            out.append(_Val(rule.predicate, out[-1].raw, subject, (start, m.end() + number.end())))
    return out


def _travel_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    raw = _value(m).strip()
    if rule.predicate == "home_airport":
        code = P.AIRPORT_NAMES.get(raw.lower(), ctx.registry.normalize("home_airport", raw))
        return [_Val(rule.predicate, code)] if re.fullmatch(r"[A-Z]{3}", code) and code not in P.NOT_AIRPORTS else []
    if rule.predicate == "delivery_day":
        if rule.cue and not (P.DELIVERY_CUE.search(ctx.event_text) or P.DELIVERY_CUE.search(ctx.prev_text)):
            return []  # "Thursdays work best" is a delivery day only in a talk about deliveries
        raw = raw[:-1] if raw.lower().endswith("days") else raw
    if rule.predicate == "seat_preference":
        raw = raw.lower().replace("exit row", "exit-row")
    return [_Val(rule.predicate, raw)]


def _fitness_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    raw = P.TRAILING.sub("", _LEADING.sub("", _value(m).strip()))
    if not raw or raw.lower() in P.NOT_NAMES or P.NOT_FITNESS.search(raw):
        return []
    return [_Val(rule.predicate, raw)]


def _cloud_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    if rule.predicate == "programming_language":
        return [_Val(rule.predicate, x.group(0)) for x in _PLANG_IN.finditer(_value(m))]
    return [_Val(rule.predicate, _value(m).strip())]


def _personal_values(m: re.Match[str], rule: _Rule, ctx: _Context) -> list[_Val]:
    raw = _value(m).strip()
    if rule.predicate == "religion" and re.search(r"\b(?:hi|hello|hey|name)\b", ctx.sentence[: m.start()], _FLAGS):
        return []  # "Hi, I'm Christian" introduces a name
    return [_Val(rule.predicate, raw)]


_diet_values = _health_values
_allergy_values = _language_values = _list_values
_FAMILIES = {family: globals()[f"_{family}_values"] for family in P.TEMPLATES}  # one value function per family


# ---- sentence guards and subjects ----


def _sentences(text: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group(0)) for m in P.SENTENCE.finditer(text) if m.group(0).strip()]


def _is_question(sentence: str, author_is_user: bool) -> bool:
    if not sentence.rstrip().endswith("?"):
        return False
    return not author_is_user or bool(P.QUESTION_START.match(sentence))


def _guarded(sentence: str, m: re.Match[str], is_user: bool) -> bool:
    """True when the match sits in a hypothetical clause or (for the user) a hedge."""
    clause = re.split(r"[,;:—–]", sentence[: m.start()])[-1]
    if P.HYPOTHETICAL.search(clause):
        return True
    return is_user and bool(P.HEDGE.search(clause + " " + m.group(0)))


def _scan_people(ctx: _Context, sentence: str) -> list[tuple[int, str, str | None]]:
    """Mentions in a sentence that change who he/she refer to: (position, pronoun, subject)."""
    found: list[tuple[int, str, str | None]] = []
    for m in P.REL_MENTION.finditer(sentence):
        rel = m.group("rel").lower()
        gender = P.REL_GENDER.get(rel)
        for pronoun in (gender,) if gender else ("he", "she"):
            found.append((m.start(), pronoun, P.REL_SUBJECTS[rel]))
    for m in _NAME_WORD.finditer(sentence):
        subject = ctx.names.get(m.group(0))
        if subject:
            gender = P.SUBJECT_GENDER.get(subject)
            for pronoun in (gender,) if gender else ("he", "she"):
                found.append((m.start(), pronoun, subject))
    for m in P.OTHER_PERSON.finditer(sentence):
        for pronoun in ("he", "she"):
            if m.group("any") or m.group(pronoun):
                found.append((m.start(), pronoun, None))
    return sorted(found, key=lambda x: x[0])


def _subject(m: re.Match[str], rule: _Rule, ctx: _Context, people, services) -> str | None:
    rel, name, pro = _group(m, "rel"), _group(m, "name"), _group(m, "pro")
    if rel:
        rel = rel.lower()
        if rel in P.REL_SUBJECTS:
            return P.REL_SUBJECTS[rel]
        kids = {s for s, _ in ctx.current_keys if s in {"user.son", "user.daughter"}}
        return kids.pop() if len(kids) == 1 else None
    if name:
        return ctx.names.get(name)
    if pro:
        pronoun = P.POSSESSIVES.get(pro.lower(), pro.lower())
        earlier = [s for pos, p, s in people if p == pronoun and pos < m.start()]
        return earlier[-1] if earlier else ctx.referents.get(pronoun)
    if rule.predicate in {"cloud_region", "deploy_tool"}:
        if _group(m, "svc"):
            return _service(m)
        before = [s for pos, s in services if pos <= m.start()] or [s for _, s in services]
        if before:
            return before[-1]
        return "user" if rule.predicate == "deploy_tool" else None
    return "user"


def _service(m: re.Match[str]) -> str:
    """`service:payments`, or `team:payments` for "the payments team"."""
    return f"{'team' if (_group(m, 'kind') or '').lower() == 'team' else 'service'}:{m.group('svc').lower()}"


def _services(sentence: str, matches: list[tuple[_Rule, re.Match[str]]]) -> list[tuple[int, str]]:
    """Services and teams named in a sentence, so that "it" and "their services" can refer to them."""
    found = [(m.start(), _service(m)) for m in P.SVC_MENTION.finditer(sentence)]
    found += [(m.start(), _service(m)) for rule, m in matches if rule.family == "cloud" and _group(m, "svc")]
    return sorted(found)


def _learn_names(events: Sequence[Event]) -> dict[str, str]:
    names: dict[str, str] = {}
    for event in events:
        for pattern in P.NAME_INTRO:
            for m in pattern.finditer(event.text or ""):
                rel = m.group("rel").lower()
                if _name_ok(m.group("name")) and rel in P.REL_SUBJECTS:
                    names.setdefault(m.group("name"), P.REL_SUBJECTS[rel])
    return names


# ---- the extractor ----


class RuleExtractor:
    """Regular-expression extractor over every registry predicate; see the module docstring."""

    name = "rules"

    def extract(
        self,
        events: Sequence[Event],
        *,
        session_id: str,
        registry: PredicateRegistry,
        current_keys: Sequence[tuple[str, str]] = (),
    ) -> list[Candidate]:
        ctx = _Context(names=_learn_names(events), registry=registry, current_keys=current_keys)
        out: list[Candidate] = []
        for event in events:
            if event.text and event.text.strip():
                ctx.event_text = event.text
                out.extend(_candidates(self._event(event, ctx), event, session_id, registry))
                ctx.prev_text = event.text
        return out

    def _event(self, event: Event, ctx: _Context) -> list[_Hit]:
        text, is_user = event.text or "", event.author == "user"
        is_tool = not is_user and event.author != "model"
        if is_tool and P.INSTRUCTION.search(text):
            return []  # tool output that talks to the agent is an injection, not a fact
        hits: list[_Hit] = []
        for offset, sentence in _sentences(text):
            ctx.sentence = sentence
            people = _scan_people(ctx, sentence)
            if not P.INSTRUCTION.search(sentence) and not _is_question(sentence, is_user):
                found = self._sentence(is_user, ctx, people)
                found += _key_values(sentence) if is_tool else []
                found += _budget_answer(sentence, ctx) if is_user and offset == 0 else []
                hits += [h._replace(start=h.start + offset, end=h.end + offset) for h in found]
            for _, pronoun, subject in people:
                ctx.referents[pronoun] = subject
        return hits

    def _sentence(self, is_user: bool, ctx: _Context, people: list[tuple[int, str, str | None]]) -> list[_Hit]:
        sentence = ctx.sentence
        inferring = not is_user and bool(P.INFERENCE.search(sentence))
        matches, rules = [], _rules()
        for index in _gates()[0 if is_user else 1].candidates(fold(sentence)):
            rule = rules[index]  # a rule whose gate words the sentence lacks cannot match: not even tried
            if not is_user and (rule.user_only or (not rule.personal and not inferring)):
                continue  # agent text: second-person templates, or any template when it is inferring
            pattern = rule.first if is_user else rule.second
            matches.extend((rule, m) for m in pattern.finditer(sentence) if not _guarded(sentence, m, is_user))
        services = _services(sentence, matches)
        hits = []
        for rule, m in matches:
            for val in _FAMILIES[rule.family](m, rule, ctx):
                subject = val.subject or _subject(m, rule, ctx, people, services)
                if subject:
                    negated = rule.negated if val.negated is None else val.negated
                    hits.append(_Hit(subject, val.predicate, val.raw, negated, *(val.span or m.span())))
        return hits


def _key_values(sentence: str) -> list[_Hit]:
    """Tool output such as `plan=annual`."""
    out = []
    checks = {"subscription_plan": P.PLAN, "diet": P.DIET, "timezone": P.TZ, "preferred_language": P.LANG}
    for m in P.KEY_VALUE.finditer(sentence):
        predicate, value = P.KEY_PREDICATES[m.group("k").lower()], m.group("v").strip()
        if predicate not in checks or re.fullmatch(checks[predicate], value, _FLAGS):
            out.append(_Hit("user", predicate, value, False, *m.span()))
    return out


def _budget_answer(sentence: str, ctx: _Context) -> list[_Hit]:
    """ "About €1,500 for the whole thing" answering the agent's "What's your budget?"."""
    if "budget" not in ctx.prev_text.lower() or not ctx.prev_text.rstrip().endswith("?"):
        return []
    m = P.BUDGET_ANSWER.match(sentence)
    return [_Hit("user", "budget", m.group("v"), False, m.start("v"), m.end())] if m else []


def _candidates(hits: list[_Hit], event: Event, session_id: str, registry: PredicateRegistry) -> list[Candidate]:
    """One candidate per (subject, predicate, value, negated) and event, quoting the first span that gave it; a
    negated value drops the positive reading of the same value."""
    text, basis = event.text or "", basis_for(event.author)
    seen: dict[tuple[str, str, str, bool], Candidate] = {}
    for hit in sorted(hits, key=lambda h: h.start):
        if not registry.knows(hit.predicate) or not hit.raw.strip():
            continue
        value = registry.normalize(hit.predicate, hit.raw)
        quote = text[hit.start : hit.end].strip()
        key = (hit.subject, hit.predicate, value, hit.negated)
        if value and quote and key not in seen:
            seen[key] = Candidate(
                subject=hit.subject,
                predicate=hit.predicate,
                value=value,
                quote=quote,
                basis=basis,  # type: ignore[arg-type]
                negated=hit.negated,
                event_id=event.id,
                event_time=event.timestamp,
                confidence=1.0 if basis == "stated" else 0.4,
                session_id=session_id,
            )
    negatives = {(s, p, v) for s, p, v, n in seen if n}
    return [c for (s, p, v, n), c in seen.items() if n or (s, p, v) not in negatives]
