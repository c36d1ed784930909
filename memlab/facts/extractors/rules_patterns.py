"""Regular-expression fragments for the rule extractor (`rules.py`), built from the word lists in `rules_words.yaml`.

The vocabularies (cities, foods, medications, value maps, ...) are data; this module turns them into fragments.
Fragments are plain strings; `%NAME%` placeholders are expanded by `expand` once at import. Person-dependent
placeholders (`%BE%`, `%I%`, `%MY%`, `%IVE%`, `%ME%`) expand to first-person words for user text and to
second-person words ("you're", "your") for agent text, so one template serves both.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

WORDS_FILE = Path(__file__).with_name("rules_words.yaml")


@cache
def load_words() -> dict[str, Any]:
    """The vocabularies of `rules_words.yaml`, read once: the patterns below are built from them at import."""
    data = yaml.safe_load(WORDS_FILE.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise TypeError(f"{WORDS_FILE.name} must be a mapping of vocabularies")
    return data


def word_list(key: str) -> list[str]:
    """One word list, checked: YAML reads a bare `no` or `on` as a boolean, which would silently drop a word."""
    value = load_words()[key]
    if not isinstance(value, list) or not all(isinstance(w, str) for w in value):
        raise TypeError(f"{WORDS_FILE.name}: {key} must be a list of strings")
    return value


def _check_map(key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise TypeError(f"{WORDS_FILE.name}: {key} must map strings to strings (quote 'true', '1')")
    return value


def value_map(key: str) -> dict[str, str]:
    """One value map (spelling -> value), checked like `word_list`."""
    return _check_map(key, load_words()[key])


def value_maps(key: str) -> dict[str, dict[str, str]]:
    """Value maps by predicate, each checked like `value_map`."""
    return {name: _check_map(f"{key}.{name}", value) for name, value in load_words()[key].items()}


def alt(words: list[str] | tuple[str, ...] | set[str], *, case_sensitive: bool = False) -> str:
    """A non-capturing alternation of literal phrases, longest first; spaces match any whitespace."""
    parts = [re.escape(w).replace(r"\ ", r"\s+") for w in sorted(set(words), key=len, reverse=True)]
    body = "|".join(parts)
    return f"(?-i:{body})" if case_sensitive else f"(?:{body})"


def _either(words: list[str]) -> str:
    """Words as a bare alternation in their listed order (unlike `alt`); spaces match any whitespace."""
    return "|".join(w.replace(" ", r"\s+") for w in words)


def _table(text: str) -> dict[str, list[tuple[str, str, str]]]:
    """Parse the rule table below into {family: [(predicate, flags, template)]}."""
    table: dict[str, list[tuple[str, str, str]]] = {}
    family = ""
    for line in text.splitlines():
        if line.startswith("["):
            family = line.strip("[]")
            table[family] = []
        elif line[:1].isspace():
            predicate, flags, template = table[family][-1]
            table[family][-1] = (predicate, flags, template + line.strip())
        elif line.strip():
            predicate, flags, template = line.split(" ", 2)
            table[family].append((predicate, flags.replace("-", ""), template))
    return table


PERSONS = {
    "first": {"I": r"(?:I|we)", "MY": r"(?:my|our)", "ME": r"(?:me|us)",
              "BE": r"(?:I['’]m|I\s+am|we['’]re|we\s+are|I['’]ve\s+been|we['’]ve\s+been|and\s+I\s+are)",
              "IVE": r"(?:I['’]ve|we['’]ve|I\s+have|we\s+have)"},
    "second": {"I": r"(?:you)", "MY": r"(?:your)", "ME": r"(?:you)", "IVE": r"(?:you['’]ve|you\s+have)",
               "BE": r"(?:you['’]re|you\s+are|you['’]ve\s+been|you\s+(?:seem|appear)\s+to\s+be|you\s+must\s+be)"},
}  # fmt: skip

ADVERBS = _either(word_list("adverbs"))
ADV = rf"(?:(?:{ADVERBS})\s+){{0,3}}"  # up to three adverbs: "I'm also now vegan"

STOPWORDS = word_list("stopwords")  # end a list item or an open phrase (allergens, foods, goals)
STOP = alt(STOPWORDS)
WORD = rf"(?!{STOP}\b)[a-zß-öø-ÿ][\w'’\-]*"
ITEM = rf"{WORD}(?:\s+{WORD}){{0,2}}"
LIST = rf"{ITEM}(?:(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+){ITEM})*"

CAP = r"[A-ZÀ-ÖØ-Þ]"
LOW = r"[a-zß-öø-ÿ]"
CAPWORD = rf"(?-i:{CAP}{LOW}[a-zß-öø-ÿ'’]*(?:-{CAP}?{LOW}+)*)(?![\w-])"
CAPSEQ = rf"{CAPWORD}(?:\s+(?:(?-i:de|do|da|del|am|upon|on)\s+)?{CAPWORD}){{0,2}}"
NAME = rf"(?-i:{CAP}{LOW}+(?:-{CAP}{LOW}+)?)\b"

CITIES = word_list("cities")
COUNTRIES = word_list("countries")
PLACES_CASED = word_list("places_cased")  # matched only so; their lower-case forms are left out of the lists above
_SHORT = {p.lower() for p in PLACES_CASED}
_SHORT_CASED = alt(PLACES_CASED, case_sensitive=True)
PLACE_KNOWN = rf"(?:{alt([p for p in CITIES + COUNTRIES if p not in _SHORT])}|{_SHORT_CASED})(?![\w-])"
PLACE = rf"(?:{PLACE_KNOWN}|{CAPSEQ})"
COUNTRY = alt(COUNTRIES)

DIETS = word_list("diets")
DIET = alt(DIETS)

FOODS = word_list("foods")
FOOD = r"(?:" + alt(FOODS) + r")(?:e?s)?(?![\w-])"

CONDITIONS = word_list("conditions")
_COND_HEAD = rf"(?:{_either(word_list('condition_heads'))})"
COND = (
    r"(?:(?:"
    + alt(CONDITIONS)
    + rf")|(?:(?-i:IT)\s+band\s+syndrome)|(?:(?!{STOP}\b)[a-z][\w'\-]*\s+){{1,2}}{_COND_HEAD})(?![\w-])"
)

MEDS = word_list("medications")
_MED_SUFFIX = r"[a-z]{3,}(?:" + _either(word_list("medication_suffixes")) + ")"
MED = r"(?:" + alt(MEDS) + "|" + _MED_SUFFIX + r")(?![\w-])"
DOSE = r"(?:\d+(?:\.\d+)?\s?(?:mg|mcg|µg|g|ml|units?)\s+(?:of\s+)?)"

JOB_HEADS = word_list("job_heads")
JOB_CAPS = word_list("job_caps")
JOBMODS = rf"(?:(?!{alt(word_list('job_modifier_stops'))}\b)[a-z][\w\-]*\s+){{0,3}}"
JOBHEAD = r"(?:" + alt(JOB_HEADS) + "|" + alt(JOB_CAPS, case_sensitive=True) + r")(?![\w-])"

ORGWORD = r"[A-Z][\w&'’\-]*(?:\.(?:com|io|ai|co|org|net))?"
ORG = rf"(?-i:{ORGWORD}(?:\s+(?:&\s+|of\s+|de\s+)?{ORGWORD}){{0,3}})"

PARTNER_REL = r"(?:wife|husband|partner|spouse|girlfriend|boyfriend|fianc[eé]e?)"
REL_ADJ = rf"(?:(?:{_either(word_list('relative_adjectives'))})\s+)"
REL = rf"{REL_ADJ}?(?P<rel>{PARTNER_REL[3:-1]}|daughter|son|kid|child)\b"
REL_SUBJECTS = value_map("rel_subjects")
REL_GENDER = value_map("rel_gender")
SUBJECT_GENDER = value_map("subject_gender")  # the same for a named child
POSSESSIVES = value_map("possessive_pronouns")

NUMBER_WORDS = value_map("number_words")
NUM = r"(?:one|two|three|four|five|six|seven|eight|nine|ten|a|an|\d{1,2})"

SPECIES = word_list("species")
SPECIES_RE = r"(?:" + alt(SPECIES) + r")(?:e?s)?(?![\w-])"
_PET_AFTER = (
    r"(?!\s+(?:allerg\w*|hair|food|sitter|walker|bed|toy|owner|person|lover|flap|door|tree|litter|insurance|"
    r"friendly|treats?|groomer|show|cafe|café)\b)"
)
PET = SPECIES_RE + _PET_AFTER
PLURAL_ENDINGS = value_map("plural_endings")  # how a plural species is made singular, first ending that applies
SAME_PLURAL = set(word_list("same_plural"))

BRANDS = word_list("brands")
BRAND_SET = set(BRANDS)
GENERIC_PRODUCTS = word_list("generic_products")
GPROD = alt(GENERIC_PRODUCTS) + r"(?![\w-])"
_PTOKEN = r"(?:[A-Z][\w+\-]*|i[A-Z][\w\-]*|\d[\w+\-]*)"
PRODUCT = rf"(?-i:(?:[A-Z][a-zA-Z\-]+|i[A-Z][a-zA-Z\-]*)(?:\s+{_PTOKEN}){{0,3}})"

PLANS_TIME = word_list("plans_time")
PLANS_OTHER = word_list("plans_other")
PLAN = alt(PLANS_TIME + PLANS_OTHER) + r"(?![\w-])"
PLAN_NOUN = rf"(?:{_either(word_list('plan_nouns'))})"

NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
BIGNUM = r"(?:\d{1,3}(?:,\d{3})+|\d{3,}|\d+(?:\.\d)?k)(?![\w%]|,\d)"  # a bare amount, where "budget" is said
_CUR_WORDS = r"(?:dollars|euros|pounds|quid|rupees|yen|francs|(?-i:GBP|USD|EUR|INR|CAD|AUD|CHF|JPY))"
AMOUNT = (
    rf"(?:[£$€¥₹]\s?(?:{NUMBER})(?:\s?(?:k|m|million|thousand|grand)\b)?"
    rf"|(?:{NUMBER})\s?(?:k\s+|thousand\s+)?{_CUR_WORDS}\b"
    rf"|(?-i:GBP|USD|EUR|INR|CAD|AUD|CHF|Rs\.?)\s?(?:{NUMBER})(?:\s?k\b)?)"
)
APPROX = (
    r"(?:(?:about|around|roughly|approximately|approx\.?|~|up\s+to|max(?:imum)?|at\s+most|under|below|less\s+than|"
    r"no\s+more\s+than|closer\s+to|close\s+to|somewhere\s+around|just\s+under|just\s+over|over|only)\s+)?"
)

ACCOUNT = (
    r"(?:(?:cash|stocks\s+and\s+shares|lifetime|junior|help\s+to\s+buy)\s+)?(?-i:ISA)|(?:(?-i:Roth)\s+)?(?-i:IRA)"
    r"|401\(?k\)?|credit\s+card|(?-i:HSA)"
    r"|(?:(?:high[- ]yield|business|personal|joint)\s+)?(?:checking|savings|current|cheque|joint|business|brokerage|"
    r"investment|money\s+market|student)\s+account"
)
ACCOUNT_TYPES = value_map("account_types")

AIRLINES = word_list("airlines")
AIRLINES_CASED = word_list("airlines_cased")  # matched only so; their lower-case forms are left out of AIRLINES
_AIRLINES_CASED = alt(AIRLINES_CASED, case_sensitive=True)
_CASED_ONLY = {a.lower() for a in AIRLINES_CASED}
AIRLINE = rf"(?:{alt([a for a in AIRLINES if a not in _CASED_ONLY])}|{_AIRLINES_CASED})(?![\w-])"
AIRPORT_NAMES = value_map("airport_names")
_AIRPORT_WORDS = alt([*AIRPORT_NAMES, *word_list("airports_other")])
AIRPORT = rf"(?:{_AIRPORT_WORDS}|(?-i:[A-Z]{{3}}))(?![\w-])"
NOT_AIRPORTS = set(word_list("not_airports"))
NOT_EMPLOYERS = set(word_list("not_employers"))
SEAT = r"(?:aisle|window|middle|exit[- ]row|bulkhead)"

DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed|thu(?:rs)?|fri|sat|sun)"
MONTH = rf"(?:{alt(word_list('months'))}|{alt(word_list('month_abbreviations'))}\.?)"
DATE = (
    rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH}(?:,?\s+\d{{4}})?"
    rf"|{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?)"
)

REGION = (
    r"(?:(?:us|eu|ap|sa|ca|me|af|il|mx)(?:-gov)?-(?:north|south|east|west|central|northeast|southeast|northwest|"
    r"southwest)-\d|(?:us|europe|asia|australia|northamerica|southamerica|me|africa)-(?:north|south|east|west|"
    r"central|northeast|southeast|northwest|southwest)\d|eastus2?|westus[23]?|centralus|northeurope|westeurope|"
    r"uksouth|ukwest|southeastasia|eastasia|japaneast|australiaeast|canadacentral|francecentral|"
    r"germanywestcentral|swedencentral|switzerlandnorth|norwayeast|centralindia|southindia)(?![\w-])"
)
_SVC_STOP = word_list("service_stops")
SVCNAME = rf"(?P<svc>(?!{alt(_SVC_STOP)}\b)[a-z][\w\-]*)"
SVC = rf"(?:(?:our|the|my|your|their)\s+)?(?:(?:prod(?:uction)?|main|primary|new)\s+)?{SVCNAME}" + (
    r"(?:\s+(?P<kind>service|api|app|backend|team|workload|platform|stack)s?)?"
)
ON_PLATFORM = rf"(?:(?:on|in)\s+(?-i:{_either(word_list('platforms'))})\s+)?"
TOOLS = word_list("tools")
TOOL = alt(TOOLS) + r"(?![\w-])"

PLANGS = word_list("programming_languages")
PLANG = r"(?:" + alt(PLANGS, case_sensitive=True) + r"(?![\w+#-])|(?-i:C\+\+|C#|F#))"
PLANG_LIST = rf"{PLANG}(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+){PLANG})*"

LANGUAGES = word_list("languages")
LANG = alt(LANGUAGES) + r"(?![\w-])"
LANG_LIST = rf"{LANG}(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+){LANG})*"

RELIGIONS = word_list("religions")
RELIGION = alt(RELIGIONS) + r"(?![\w-])"

TZ_ABBR = rf"(?-i:{_either(word_list('tz_abbreviations'))})(?:\s?[+-]\s?\d{{1,2}}(?::?\d{{2}})?)?(?![\w/])"
TZ_IANA = r"(?-i:[A-Z][a-z]+(?:_[A-Z][a-z]+)*/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?)"
TZ_WORDS = value_map("tz_words")
TZ_ABBR_EXTRA = value_map("tz_abbr_zones")
CITY_TZ = value_map("city_tz")
TZ = rf"(?:{TZ_ABBR}|{TZ_IANA}|(?:{alt(list(TZ_WORDS) + list(CITY_TZ))})\s+time)"

# Words that can never be a place, an organisation, a name or a product in a capitalised slot.
NOT_NAMES = {*word_list("not_names"), *LANGUAGES, *AIRLINES, *TOOLS}

# Shared subject slots: the user ("I'm"), a relative ("my daughter is"), a known name, or he/she.
WHO_BE = r"(?:%BE%|(?:%MY%\s+%REL%(?:\s+%NAME%)?|(?P<pro>he|she)\b|(?P<name>%NAME%))\s*(?:\s+is|['’]s|\s+has\s+been))"
WHO3 = r"(?:%MY%\s+%REL%(?:\s+%NAME%)?|(?P<pro>he|she)\b|(?P<name>%NAME%))"
WANT = (
    r"(?:\s+%ADV%(?:want|need|would\s+like|am\s+trying|plan|hope|aim|decided|started|began|have\s+started)|['’]d\s+like|"
    r"['’]m\s+trying|['’]ve\s+(?:started|decided))"
)
FGPHRASE = (
    r"(?:(?:the|a|an|my)\s+)?(?P<v>[^,.;:!?()]{2,80}?)(?=\s*(?:[,.;:!?()]|$|\s(?:so|but|because|and\s+(?:I|we|my|it|he|"
    r"she|the)|which|while|though|although|instead)\b))"
)
RACE = (
    r"(?:marathon|half|10k|5k|\d+\s?k\b|km|kilomet\w*|miles?|race|ultra|parkrun|triathlon|ironman|sportive|hyrox|sub)"
)
FGVERB = (
    rf"(?:run\s+(?=[^,.;!?]{{0,40}}\b{RACE})|lose\s+(?=[^,.;!?]{{0,20}}\b(?:kg|kilos?|pounds|lbs?|stone|weight)\b)"
    r"|(?:deadlift|squat|bench(?:\s+press)?|press)\s+(?=\d)|(?:swim|cycle|ride|row|hike|climb)\s+(?=[^,.;!?]{0,30}"
    rf"\b(?:\d|km|miles?)\b)|(?:finish|complete|do|compete\s+in|qualify\s+for|train\s+for)\s+(?=[^,.;!?]{{0,40}}\b"
    rf"(?:{RACE[3:-1]}|pull-?ups?|push-?ups?)\b)|get\s+(?:under|below|down\s+to)\s+(?=\d)|gain\s+(?=\d)"
    r"|break\s+(?=[^,.;!?]{0,20}\b(?:\d|sub)))"
)
GOALPHRASE = r"(?P<v>[^,.;:!?()]{2,60}?)(?=\s*(?:[,.;:!?()]|$|\s(?:so|but|because|and\s+(?:I|we)|which|by\s+\d)\b))"

LOCAL_VALUES = value_maps("local_values")  # spellings the registry's aliases do not cover, by predicate
KEY_PREDICATES = value_map("key_predicates")  # tool output written as key=value

# The rule table. `[family]` starts a family (its values are read by `_<family>_values` in rules.py); each rule is
# "predicate flags template", flags being `n` (negated), `u` (user text only), `c` (needs a topic cue) or `-`. An
# indented line continues the template above it, and a space in a template stands for `\s+`.
TEMPLATES = _table(
    r"""
[place]
home_city - \b(?:%I% %ADV%live|%BE% %ADV%(?:living|based|located|settled)|%I% %ADV%reside) in (?P<v>%PLACE%)(?:\s*,\s*
    (?P<country>%COUNTRY%))?
home_city - \b(?:%I%|%IVE%) (?:just |recently |finally |now |also )?(?:moved|relocated|emigrated) (?:back )?
    (?:from %PLACE% )?to (?P<v>%PLACE%)
home_city - \b%BE% %ADV%(?:now )?in (?P<v>%PLACE_KNOWN%)(?! (?:for|on|until|till|this|next|last|today|tomorrow)\b)
home_city - \b%MY% (?:house|home|flat|apartment|place|family home) (?:is )?in (?P<v>%PLACE%)
home_city - \b%BE% a (?:family|household|couple) of \w+ in (?P<v>%PLACE%)
home_city - \b%I% %ADV%work (?:at|for) %ORG% in (?P<v>%PLACE%)
home_city n \b%I% (?:no longer|don['’]t|do not) live in (?P<v>%PLACE%)
home_city n \b(?:%I%|%IVE%) (?:just )?(?:moved|relocated) (?:away )?(?:out of|away from) (?P<v>%PLACE%)
[timezone]
timezone - \b%BE% %ADV%(?:in|on|using) (?P<v>%TZ%)(?: time(?:\s*zone)?)?
timezone - \b%MY% (?:local )?time\s*zone is (?:now )?(?P<v>%TZ%)
timezone u \b(?:set|switch|change|put|move) (?:me|us|my (?:time\s*zone|clock|reminders|calendar)) (?:to|on) (?P<v>%TZ%)
timezone u \buse (?P<v>%TZ%) for (?:my |our |all )?(?:reminders|meetings|times|schedule|calendar|events)
timezone u ,\s*so (?P<v>%TZ_ABBR%)\s*(?=[.!,;]|$)
timezone - \b(?:show|display|give|list|put) (?:all |the )?(?:times|dates|reminders|schedules?) in (?P<v>%TZ%)
[language]
preferred_language - \b(?:reply|replies|respond|responses|answer|answers|answering|replying|responding|write (?:back
    |to me)|talk to me|speak to me|explain(?: [\w']+){0,3}?|explanations) (?:only )?in (?P<v>%LANG%)
preferred_language - \b%I%(?: %ADV%(?:prefer|want|would like)|['’]d (?:prefer|like)) (?:to (?:speak|chat|talk
    |communicate|get answers|be answered) in )?(?P<v>%LANG%)(?! (?:food|cuisine|class|classes|lessons|course|wine|people
    |culture|films|movies|music|books))
preferred_language - \b%MY% preferred language is (?P<v>%LANG%)
preferred_language nu \b(?:stop|don['’]t|do not|no need to) (?:reply|replying|respond|responding|answer|answering|write
    |writing|speak|speaking|talk|talking) (?:to me )?in (?P<v>%LANG%)
learning_language - \b%BE% %ADV%(?:learning|studying|taking|doing) (?P<v>%LANG_LIST%)(?! (?:food|cuisine|culture|history
    |literature))
learning_language - \b%I%%WANT% to (?:learn|study) (?P<v>%LANG_LIST%)
learning_language - \b(?:%IVE%|%I%) (?:just |recently )?(?:started|begun|began|picked up) (?:learning |studying )?
    (?P<v>%LANG_LIST%)(?! (?:food|cuisine))
learning_language - \b(?:%BE% picking|%I% picked) (?P<v>%LANG_LIST%) (?:back )?up
learning_language - \b%I% %ADV%(?:take|have) (?P<v>%LANG%) (?:lessons|classes)
learning_language n \b(?:%BE% (?:dropping|quitting|stopping|giving up(?: on)?|pausing)|%IVE% (?:dropped|quit|stopped
    (?: learning)?|given up(?: on)?)|%I% (?:dropped|quit|stopped(?: learning)?|gave up(?: on)?)
    |%BE% no longer (?:learning|studying)) (?P<v>%LANG_LIST%)
[diet]
diet - \b%WHO_BE% %ADV%(?:an? )?(?:strict |full |fully |100% )?(?P<v>%DIET%)(?![\w-])
diet - \b%BE% %ADV%(?:on|following|doing) (?:an? |the )?(?P<v>%DIET%)(?: diet)?(?![\w-])(?! (?:plan|subscription|box
    |boxes|menu|option))
diet - \b(?:%IVE%|%I%) (?:just |recently |now |also )?(?:gone|went|turned|became|become|switched to|started eating
    |started being|decided to go|decided to be) (?:an? )?(?:fully )?(?P<v>%DIET%)(?![\w-])
diet - \b%I% %ADV%eat (?P<v>everything|anything)\b
diet - \b%BE% (?:back to )?eating (?P<v>everything)\b
diet - \b%I% (?:only )?eat (?P<v>fish but no meat)
diet u \b(?:only )?(?P<v>%DIET%) (?:options|meals|boxes|recipes|dishes|food|menu) (?:are|is) (?:fine|ok|okay|good|great
    |perfect)
diet u \bonly (?:show (?:me |us )?)?(?P<v>%DIET%) (?:options|meals|boxes|recipes|dishes|food)
diet n \b%WHO_BE% (?:no longer|not(?: really)?) (?:an? )?(?P<v>%DIET%)(?![\w-])
diet n \b(?:%I%|%IVE%) (?:stopped|quit|gave up|given up) (?:being |eating |doing )?(?P<v>%DIET%)(?![\w-])
[allergy]
allergy - \b%WHO_BE% %ADV%(?:(?:severely|very|mildly|slightly|deathly|badly|seriously) )?allergic to (?P<v>%LIST%)
allergy - \b(?:%IVE%|%I% %ADV%have) (?:got )?(?:an? )?(?:severe |mild |bad )?(?P<v>%WORD%) allerg(?:y|ies)\b
allergy - \b(?:%IVE%|%I% %ADV%have) (?:got )?(?:an? )?(?:severe |mild )?allerg(?:y|ies) to (?P<v>%LIST%)
allergy - \b%WHO3% (?:also )?has (?:an? )?(?:severe |mild )?(?P<v>%WORD%) allerg(?:y|ies)\b
allergy u \b%MY% (?P<v>%WORD%) allerg(?:y|ies)\b(?! (?:test|tests|testing|clinic|doctor|specialist|appointment|nurse
    |is gone|has gone|went away|cleared|is over|has cleared))
allergy - \b(?:(?:%MY% %REL%(?: %NAME%)?|(?P<name>%NAME%))['’]s|(?P<pro>his|her)) (?P<v>%WORD%) allerg(?:y|ies)\b
    (?! (?:test|tests|is gone|has gone|went away|cleared|is over))
allergy n \b%WHO_BE% (?:no longer|not(?: actually| really)?|actually not) allergic to (?P<v>%LIST%)
allergy n \b%I% (?:outgrew|(?:have|['’]ve) outgrown) (?:my |the )?(?P<v>%WORD%) allergy
allergy n \b%MY% (?P<v>%WORD%) allergy (?:is gone|has gone|went away|has cleared(?: up)?|cleared up|is over
    |has resolved)
[food]
food_dislike - \b%I% %ADV%(?:can['’]t stand|cannot stand|hate|dislike|detest|loathe|don['’]t (?:like|eat|want|enjoy
    |care for)|do not (?:like|eat|want)|never eat|avoid|won['’]t eat) (?P<v>%LIST%)
food_dislike - \b%BE% not a (?:big |huge )?fan of (?P<v>%LIST%)
food_dislike u \bnone of us (?:eat|eats|like|likes) (?P<v>%LIST%)
food_dislike - \b%WHO3% (?:hates|dislikes|doesn['’]t (?:like|eat)|can['’]t stand|won['’]t eat) (?P<v>%LIST%)
food_dislike nu \b(?P<v>%FOOD%(?: and %FOOD%)?) (?:is|are) (?:fine|ok|okay|alright|back on the menu) (?:now|again
    |these days)
food_dislike n \b%I% (?:actually |now )?(?:like|love|enjoy|don['’]t mind) (?P<v>%FOOD%) (?:now|these days|again)
likes_spicy - \b%I% %ADV%(?:like|love|enjoy|adore|prefer) (?:(?:really|very|extra) )?(?P<v>spicy)(?: (?:food|dishes
    |meals|things|stuff|curries|recipes|options))?\b
likes_spicy - \b%I% %ADV%(?:like|love|enjoy|prefer) (?:it|things|my food|food) (?:(?:really|very|extra) )?(?P<v>spicy
    |hot)\b
likes_spicy - \b%I% %ADV%(?:don['’]t|do not|can['’]t|cannot) (?:really )?(?:like|handle|stand|eat|take|tolerate
    |enjoy) (?:(?:very|too|really) )?(?P<v>spicy(?: (?:food|dishes|meals|things|stuff))?|spice|heat|hot food)\b
likes_spicy u \b(?:keep (?:everything|it|things|the food|my food|meals) (?P<v>mild)|nothing (?:too )?(?P<v2>spicy)
    |not too (?P<v3>spicy)|(?P<v4>no spice))\b
likes_spicy - \b%I% %ADV%prefer (?:my food |things |it )?(?P<v>mild)\b
likes_spicy u \bthe (?P<v>spicier) the better\b
[health]
medical_condition - \b(?:%IVE%(?: got)?|%I% %ADV%(?:have|suffer from|live with|deal with|struggle with)
    |%BE% (?:suffering from|living with|dealing with)) (?:an? )?(?:(?:mild|severe|chronic|bad|slight) )?(?P<v>%COND%)
medical_condition - \b(?:%IVE% (?:just |recently )?been|%I% (?:was|were)|%BE% (?:just |recently )?been) (?:just |recentl
    y |finally |officially )?diagnosed with (?:an? )?(?P<v>%COND%|%ITEM%)
medical_condition - \b%WHO3% (?:also )?(?:has|suffers from|(?:was|has been) (?:just |recently )?diagnosed with) (?:an? )
    ?(?P<v>%COND%)
medical_condition - \b%BE% %ADV%(?P<v>diabetic|pre-?diabetic|asthmatic|coeliac|celiac|epileptic|an[a]?emic|hypertensive
    |lactose intolerant|gluten intolerant)\b
medical_condition u \b(?:confirmed|diagnosed) (?:it (?:as|was) |me with )?(?P<v>%COND%)
medical_condition n \b%I% (?:don['’]t|do not|no longer) have (?:an? )?(?P<v>%COND%)
medical_condition n \b(?:%IVE%|%I%) (?:fully )?(?:recovered|healed) from (?:my |the )?(?P<v>%COND%)
medical_condition n \b%MY% (?P<v>%COND%) (?:is|has) (?:gone|cleared up|resolved|healed|in remission)
medical_condition n \b%BE% (?:no longer|not) (?P<v>diabetic|pre-?diabetic|asthmatic|coeliac|celiac|epileptic
    |hypertensive)\b
medication - \b(?:%I% %ADV%(?:take|use)|%BE% %ADV%(?:on|taking)|%IVE% (?:been )?(?:prescribed|put on|started
    (?: taking)?)|%I% (?:was )?(?:prescribed|started(?: taking)?)) (?:%DOSE%)?(?P<v>%MED%)
medication u \b(?:and|also) (?:also )?take (?:%DOSE%)?(?P<v>%MED%)
medication u \b(?:put|started) me on (?P<v>%MED%)
medication - \b%WHO3% (?:also )?(?:takes|is on|is taking|uses) (?:%DOSE%)?(?P<v>%MED%)
medication n \b(?:(?:%I%|%IVE%) (?:stopped|quit)(?: taking)?|%BE% (?:no longer (?:on|taking)|not (?:on|taking)|off)
    |%I% (?:came|went) off|%IVE% come off|%I% (?:no longer|don['’]t) take) (?P<v>%MED%)
medication nu \b(?:took|taken|taking) me off (?P<v>%MED%)
[work]
employer - \b(?:%I% %ADV%work|%BE% %ADV%working) (?:at|for) (?:the )?(?P<v>%ORG%)
employer - \b(?:%I%|%IVE%) (?:just |recently )?(?:joined|started at|started working (?:at|for)|got a job (?:at|with)
    |been hired by|was hired by) (?P<v>%ORG%)
employer - \b%MY% (?:new |current )?(?:job|role|position|employer|company) (?:at|with|is) (?P<v>%ORG%)
employer - \b%WHO_BE% (?:an?|the) %JOBMODS%%JOBHEAD% (?:at|for|with) (?P<v>%ORG%)
employer c \b%BE% (?:now )?at (?P<v>%ORG%)
employer u \b(?:a|new) job (?:at|with) (?P<v>%ORG%)
employer - \b%WHO3% (?:works|is working) (?:at|for) (?P<v>%ORG%)
employer n \b(?:%I% (?:don['’]t|do not|no longer) work (?:at|for)|%BE% no longer (?:at|with|working (?:at|for))|(?:%I%
    |%IVE%) (?:just |recently )?(?:left|quit)|%I% (?:was|got) (?:laid off|let go|fired) (?:from|by)) (?P<v>%ORG%)
employer - \b%I% %ADV%work as (?:an? |the )?%JOBMODS%%JOBHEAD% (?:at|for) (?P<v>%ORG%)
job_title - \b%WHO_BE% %ADV%(?:an?|the) (?P<v>%JOBMODS%%JOBHEAD%)
job_title - \b%I% %ADV%work as (?:an? |the )?(?P<v>%JOBMODS%%JOBHEAD%)
job_title - \b(?:%I%|%IVE%) (?:just |recently )?(?:started|joined) (?:at )?%ORG% as (?:an? |the )?
    (?P<v>%JOBMODS%%JOBHEAD%)
job_title - \b%MY% (?:job title|title|role|job|position) is (?:now )?(?:an? |the )?(?P<v>%JOBMODS%%JOBHEAD%)
job_title - \b(?:%IVE% been|%I% (?:got|was|just got)) promoted to (?:an? |the )?(?P<v>%JOBMODS%%JOBHEAD%)
job_title n \b%WHO_BE% (?:no longer (?:an?|the) (?P<v>%JOBMODS%%JOBHEAD%)|not (?:an?|the) (?P<v2>%JOBMODS%%JOBHEAD%) any
    \s*more)
job_title n \b%I% (?:quit|left) (?:my job as|being) (?:an? |the )?(?P<v>%JOBMODS%%JOBHEAD%)
[family]
partner_name - \b%MY% %PARTNER_REL%\s*,? (?P<v>%NAME%)
partner_name - \b(?P<v>%NAME%)\s*, %MY% %PARTNER_REL%\b
partner_name - \b%MY% %PARTNER_REL%(?:['’]s name is| is called) (?P<v>%NAME%)
partner_name - \b%BE% married to (?P<v>%NAME%)
partner_name n \b%I% (?:broke up with|split up with|divorced|separated from) (?:my %PARTNER_REL%\s*,? )?(?P<v>%NAME%)
child_name - \b%MY% %REL_ADJ%?(?:daughter|son|kid|child|boy|girl)\s*,? (?P<v>%NAME%)
child_name - \b%MY% (?:\w+ )?(?:kids|children|sons|daughters)\s*,? (?P<v>%NAME%(?:\s*,\s*%NAME%)* and %NAME%)
child_name - \b(?P<v>%NAME%)\s*, %MY% (?:daughter|son)\b
child_name - \b%MY% (?:daughter|son)['’]s name is (?P<v>%NAME%)
number_of_children - \b(?:%I% %ADV%have|%IVE% got|%I% have got) (?P<v>%NUM%) (?:(?:young|little|grown(?:-up)?|small) )?
    (?:kids|children|child|kid)\b
number_of_children - \b%MY% (?P<v>%NUM%) (?:kids|children)\b
number_of_children - \b%BE% (?:a )?(?:mum|mom|mother|dad|father|parents?) (?:of|to) (?P<v>%NUM%)\b
number_of_children - \b%I% (?:(?:don['’]t|do not) have (?:any )?|have no )(?P<v>kids|children)\b
[pet]
pet - \b(?:%I% %ADV%(?:have|own)|%IVE% got|%I% have got|%I% (?:just |recently )?(?:got|adopted|rescued|took in)
    |%IVE% (?:just |recently )?(?:adopted|rescued|got)) (?:an?|one|two|three|\d) (?:(?!%STOP%\b)[a-z]+ )??(?P<v>%PET%)
    (?:\s*,? (?:named|called) (?P<pname>%NAME%))?
pet u \b%MY% (?:(?:new|old|little|rescue|senior) )?(?P<v>%PET%)(?:\s*,? (?P<pname>%NAME%))?
pet n \b%I% (?:no longer|don['’]t|do not) have (?:the|a|an|our|my) (?P<v>%PET%)
pet n \b%I% (?:just |recently |had to )?(?:rehomed|rehome|gave away|gave up|lost|sold) (?:the|our|my) (?P<v>%PET%)
pet n \b%MY% (?P<v>%PET%)(?:\s*,? (?P<pname>%NAME%)\s*,?)? (?:passed away|died|was put down|had to be put down|ran away)
[product]
owned_product - \b(?:%I% %ADV%(?:have|own)|%IVE% got|%I% have got|%I% (?:just |recently |finally )?(?:bought|got
    |purchased)|%IVE% (?:just )?(?:bought|purchased)|%I% %ADV%drive|and (?:just )?bought) (?:an?|the
    |one) (?:new |second-hand |used |refurbished )?(?P<v>%PRODUCT%|%GPROD%)
owned_product u \b%MY% (?:new |old )?(?P<v>%PRODUCT%)
owned_product - \b%WHO3% (?:also )?(?:has|owns|bought|got) (?:an?|the) (?:new )?(?P<v>%PRODUCT%|%GPROD%)
owned_product - \b%MY% (?:order history|orders?|purchase history|purchases|records?) shows? (?P<listed>[^.;!?]{3,160})
owned_product n \b(?:(?:%I%|%IVE%) (?:just |finally |also )?|and )(?:sold|returned|gave away|given away|got rid of
    |traded in|donated|lost) (?:my|our|the) (?:old |broken |cracked |faulty )?(?P<v>%PRODUCT%|%GPROD%)
owned_product n \b%I% (?:no longer|don['’]t|do not) (?:have|own) (?:an?|the|my) (?P<v>%PRODUCT%|%GPROD%)
owned_product nu \b(?P<v>%PRODUCT%) (?:was|is) (?:a gift|a present) for\b
[plan]
subscription_plan - \b%BE% %ADV%on (?:the|a|an) (?P<v>%PLAN%) (?:(?-i:[A-Z][\w\-]*) ){0,3}%PLAN_NOUN%\b
subscription_plan - \b(?:%I%|%IVE%) %ADV%(?:switched|upgraded|downgraded|moved|changed|went|signed up) (?:over |back )?
    (?:to|for) (?:the |a |an )?(?P<v>%PLAN%)(?: %PLAN_NOUN%)?\b
subscription_plan u \b(?:switch|move|put|change|upgrade|downgrade) (?:me|us|my (?:(?-i:[A-Z][\w\-]*) ){0,3}
    (?:subscription|plan|account|membership)) (?:over )?to (?:the |a |an )?(?P<v>%PLAN%)(?: %PLAN_NOUN%)?\b
subscription_plan - \b%MY% (?:current )?(?:plan|subscription|tier|membership|billing) is (?:now )?(?:the )?(?P<v>%PLAN%)
subscription_plan - \b%I% (?:have|pay for|bought|subscribed to) (?:the|a|an) (?P<v>%PLAN%) (?:plan|subscription
    |membership)
subscription_plan - \b%I% %ADV%pay (?P<v>yearly|annually|monthly|quarterly)\b(?! (?:rent|fees?|bills?|for))
subscription_plan n \b%I% (?:cancelled|canceled|ended|stopped|quit) (?:my|our|the) (?P<v>%PLAN%) (?:plan|subscription
    |membership)
subscription_plan n \b%BE% (?:no longer|not) on (?:the|a|an) (?P<v>%PLAN%) (?:plan|subscription|tier)
[money]
budget - \b(?:(?:%MY%|the|total|overall|max(?:imum)?|new|current|whole|monthly|weekly|annual) )*budget\s+
    (?:for (?:[\w'’\-]+ ){1,5}?)?(?:is|was raised to|has (?:gone|been) (?:up|down) to|(?:went|goes|is going) (?:up
    |down) to|(?:has been )?(?:increased|raised|cut|reduced|lowered|upped|bumped(?: up)?) to|of) (?:now )?%ADV%
    %APPROX%(?P<v>%AMOUNT%|%BIGNUM%)
budget - \b(?:%I%|%IVE%) (?:just |now )?(?:raised|increased|upped|bumped up|lowered|cut|reduced|set) (?:the
    |%MY%) budget to %APPROX%(?P<v>%AMOUNT%|%BIGNUM%)
budget u \ba budget of %APPROX%(?P<v>%AMOUNT%)
budget - \b%I% (?:can|could) (?:only )?(?P<verb>spend|afford|do) %APPROX%(?P<v>%AMOUNT%)
monthly_income - \b%I% %ADV%(?:take home|bring home|earn|make|net|get paid|clear) %APPROX%(?P<v>%AMOUNT%|%NUMBER%)\s*
    (?:a|per|each|every|/)\s*month
monthly_income - \b(?:%MY% )?(?:monthly )?(?P<kind>take-?home(?: pay)?|net (?:pay|income|salary)|(?:monthly )?(?:income
    |salary|pay))(?: deposits?)? (?:is|are|average|averages|comes? to|(?:goes|went|has gone) (?:up|down) to|is now
    |will be) (?:now )?%ADV%%APPROX%(?P<v>%AMOUNT%|%NUMBER%)(?P<per>\s*(?:a|per|each) month)?
monthly_income - \b%I% (?:only )?have %APPROX%(?P<v>%AMOUNT%) (?:a month )?coming in
savings_goal - \b(?:%BE% %ADV%|(?:start|started|starting|begin) |%I%%WANT% to (?:start )?)sav(?:e|ing) (?:up )?(?:for
    |towards?) (?:(?:my|our|a|an|the) )?%GOALPHRASE%
savings_goal - \b%I%%WANT% to save (?:up )?%APPROX%(?P<v>%AMOUNT%(?: (?:for|by|towards?|in) [^,.;:!?()]{2,40})?)
savings_goal - \b%MY% savings? (?:goal|target) is (?:now )?(?:to save )?%APPROX%(?P<v>%AMOUNT%(?: (?:for|by|in) [^,.;:!?
    ()]{2,40})?)
bank_account_type - \b(?:%I% %ADV%(?:have|hold|use)|%IVE% got|%I% (?:just |recently )?(?:opened|got|set up)
    |%IVE% (?:just )?(?:opened|set up)) (?P<v>(?:an?|one|two|the) (?:new )?(?:%ACCOUNT%)(?:(?:\s*,\s*| and )(?:an?|one
    |the) (?:new )?(?:%ACCOUNT%))*)
bank_account_type - \b%MY% (?:personal )?(?P<v>(?:checking|savings|current|joint|brokerage) account|checking|(?:cash )?
    (?-i:ISA)|(?:(?-i:Roth) )?(?-i:IRA)|401\(?k\)?)
bank_account_type n \b(?:%I% (?:just |finally )?(?:closed|cancelled|canceled|shut down)|%IVE% (?:just )?(?:closed
    |cancelled|canceled)) (?:my|our|the) (?P<v>%ACCOUNT%)
[travel]
preferred_airline - \b%I% %ADV%(?:prefer|like|love) (?:to )?(?:fly(?:ing)? (?:with )?)?(?P<v>%AIRLINE%)
preferred_airline - \b%I% (?:always|usually|normally|mostly|generally|only|tend to) fly (?:with )?(?P<v>%AIRLINE%)
preferred_airline - \b%MY% (?:preferred|favourite|favorite|usual|go-to) airline is (?:still )?(?P<v>%AIRLINE%)
preferred_airline - \b(?P<v>%AIRLINE%) is %MY% (?:preferred|favourite|favorite|usual|go-to) airline
preferred_airline n \b(?:%BE% not flying|%I% (?:won['’]t|will never|refuse to) fly) (?:with )?(?P<v>%AIRLINE%)
    (?=[^.!?]{0,25}\b(?:any\s*more|again|ever)\b)
preferred_airline n \b(?:%BE% no longer flying|%I% no longer fly) (?:with )?(?P<v>%AIRLINE%)
home_airport - \b(?:%I%|and) %ADV%fly out of (?P<v>%AIRPORT%)
home_airport - \b(?:%I%|and) (?:always|usually|normally|mostly|generally|tend to) fly from (?P<v>%AIRPORT%)
home_airport - \b%MY% (?:home|local|usual|nearest) airport is (?:now )?(?P<v>%AIRPORT%)
home_airport - \b(?P<v>%AIRPORT%) is %MY% (?:home|local|usual) airport
seat_preference - \b(?:%I%|%WHO3%) %ADV%(?:prefers?|likes?|loves?|wants?|needs?|chooses?|picks?|books?|takes?|requests?
    |go(?:es)? for|asks? for) (?:an? |the )?(?P<v>%SEAT%)(?: seats?)?\b
seat_preference - \b%MY% (?:seat(?:ing)? preference|preferred seat) is (?:an? |the )?(?P<v>%SEAT%)
seat_preference - \b%BE% (?:an? )?(?P<v>aisle|window)(?: seat)? (?:person|guy|girl|kind of (?:person|traveller
    |traveler))
seat_preference u ^\W*(?P<v>aisle|window)(?: seats?)?\s*,?\s*(?:please\s*,?\s*)?(?:always|please|for me|from now on
    |every time|if possible)\b
seat_preference - \b%I% %ADV%(?:prefer|like) (?:sitting|to sit) (?:by|at|near|on|in) the (?P<v>aisle|window)
delivery_day - \b(?:please )?deliver (?:it |them |my box(?:es)? |the box(?:es)? )?on (?P<v>%DAY%s?)\b
delivery_day - \b%MY% deliver(?:y|ies)(?: day)? (?:is|are|should be|to be) (?:now |always )?(?:on )?(?P<v>%DAY%s?)\b
delivery_day - \bdeliver(?:y|ies) (?:\w+ ){0,2}?(?:on|to|for) (?P<v>%DAY%s)\b
delivery_day - \b(?:switch|move|change|shift|put) (?:%MY% |the )?(?:deliver(?:y|ies)|box(?:es)?)
    (?: day)? to (?P<v>%DAY%s?)\b
delivery_day uc ^\W*(?P<v>%DAY%s) (?:work|works|are|is|suit|suits) (?:best|better|good|great|ideal|fine|me|us)\b
[fitness]
fitness_goal - \b%WHO_BE% %ADV%training for %FGPHRASE%
fitness_goal - \b(?:(?:%MY%|the|new|main|next|fitness|training|big) )*goal(?: is|\s*:) (?:now )?(?:to )?
    (?P<v>%FGVERB%[^,.;:!?()]{0,80}?)(?=\s*(?:[,.;:!?()]|$|\s(?:so|but|because|and (?:I|we)|which)\b))
fitness_goal - \b%I%%WANT% to (?P<v>%FGVERB%[^,.;:!?()]{0,80}?)(?=\s*(?:[,.;:!?()]|$|\s(?:so|but|because|and (?:I|we)
    |which)\b))
fitness_goal - \b%BE% (?:now )?(?:switching|switched|moving|changing) to (?:an? |the )?(?P<v>[^,.;:!?
    ()]{0,30}?%RACE%[^,.;:!?()]{0,40}?)(?=\s*(?:[,.;:!?()]|$|\s(?:so|but|because|instead)\b))
fitness_goal - \b(?:%IVE%|%BE%|%I%) (?:signed up|registered|entered) (?:for|in) (?:the |an? )?(?P<v>[^,.;:!?
    ()]{0,30}?%RACE%[^,.;:!?()]{0,40}?)(?=\s*(?:[,.;:!?()]|$|\s(?:so|but|because)\b))
fitness_goal n \b(?:%IVE%|%I%) (?:pulled out of|dropped out of|withdrawn from|withdrew from|given up on
    |gave up on) %FGPHRASE%
fitness_goal n \b%WHO_BE% no longer training for %FGPHRASE%
[cloud]
cloud_region - \b%SVC% %ADV%(?:now )?(?:runs?|is running|are running|is hosted|are hosted|is deployed|lives|sits|is
    |are) (?:now |still |definitely |everything |all |primarily )?%ON_PLATFORM%(?:(?:in|on|out of) )?(?P<v>%REGION%)
cloud_region - \b(?:it|they|everything|(?:their|its) (?:services?|workloads?|apps?|stuff))(?:['’]s|['’]re)? %ADV%
    (?:now )?(?:runs?|is running|are running|is hosted|lives|is|are)?\s*%ON_PLATFORM%(?:in )?(?P<v>%REGION%)
cloud_region - \b(?:%I%|%IVE%) (?:just |finally )?(?:moved|migrated|cut|failed|switched|shifted) %SVC% (?:over )?
    (?:from %REGION% )?to (?P<v>%REGION%)
cloud_region - \b%SVC% (?:has )?(?:moved|migrated|was moved|was migrated) (?:over )?(?:from %REGION% )?to (?P<v>%REGION%
    )
cloud_region - \b%I% (?:run|host|deploy) %SVC% in (?P<v>%REGION%)
cloud_region n \b%SVC% (?:no longer|doesn['’]t|does not) runs? in (?P<v>%REGION%)
deploy_tool - \b(?:(?:%I%|and) %ADV%)?(?:deploy|deploys|ship|ships|release|releases|roll out|rolls out) (?:(?:it|them
    |everything|this|%SVCNAME%) )?(?:with|via|using|through) (?P<v>%TOOL%)
deploy_tool - \b(?:(?:is|are|gets|get|was|were) )?%ADV%(?:deployed|shipped|released|rolled out) (?:now )?(?:with|via
    |using|through|by) (?P<v>%TOOL%)
deploy_tool - \b(?:%I%|%SVC%) (?:use|uses|is on|are on|switched to|moved to|migrated to) (?P<v>%TOOL%)(?: (?:for|to) (?:
    (?:their|its|our|my|the) )?(?:deploy|deploys|deployments?|CD|releases?|shipping))?
deploy_tool - \b(?:%BE% (?:switching|moving|migrating)|(?:%I%|%IVE%) (?:just |finally )?(?:switched|moved|migrated))
    (?: %SVCNAME%)? (?:from|off|away from) %TOOL% (?:to|onto|for) (?P<v>%TOOL%)
deploy_tool n \b(?:%I%|%IVE%) (?:just |finally )?(?:migrated|moved|switched) (?:%SVCNAME% )?(?:off
    |away from) (?P<v>%TOOL%)
deploy_tool n \b%I% (?:no longer|don['’]t|do not) (?:use|deploy with) (?P<v>%TOOL%)
deploy_tool n \b(?:%IVE%|%I%) (?:dropped|ditched|retired) (?P<v>%TOOL%)
programming_language - \b%I% %ADV%(?:write|code in|program in|work in|develop in|use) (?:mostly |mainly |a lot of |som
    e )?(?P<v>%PLANG_LIST%)
programming_language u \b(?:is|are) (?:all |mostly |mainly |entirely )?written in (?P<v>%PLANG%(?:(?:\s*,\s*| and )
    (?:the [\w\-\s]{1,30}? in )?%PLANG%)*)
programming_language u \b(?:it['’]s|everything['’]s|everything is|we['’]re) (?:all|mostly|mainly|entirely
    |pure) (?P<v>%PLANG%)
programming_language u \b(?:scripts|code|codebase|services?|backend|frontend|stack|tooling|cli|sdk) (?:is|are) (?:(?:all
    |mostly|now|also|written) )*(?:in )?(?P<v>%PLANG%)
programming_language u \b(?:plus|and|also|with) some (?P<v>%PLANG%) (?:scripts|code|services?|tooling)
programming_language - \b%BE% (?:an? )?(?P<v>%PLANG%) (?:developer|engineer|dev|programmer|shop|team)
programming_language n \b(?:%I% (?:don['’]t|do not|no longer) (?:write|use|code in|work in)|(?:%IVE%|%I%) (?:dropped
    |stopped (?:using|writing)|moved away from|abandoned|ditched)) (?P<v>%PLANG_LIST%)
[personal]
religion - \b%BE% %ADV%(?:an? )?(?:(?:practising|practicing|devout|observant|born-again) )?(?P<v>%RELIGION%)
religion n \b%BE% (?:no longer|not) (?:an? )?(?:practising )?(?P<v>%RELIGION%)
birthday - \b%MY% (?:birthday|bday|b-day|date of birth|(?-i:DOB)) is (?:on )?(?:the )?(?P<v>%DATE%)
birthday - \b%I% was born on (?:the )?(?P<v>%DATE%)
birthday - \b(?:(?:%MY% %REL%(?: %NAME%)?|(?P<name>%NAME%))['’]s|(?P<pro>his|her)) (?:birthday|bday) is (?:on )?
    (?:the )?(?P<v>%DATE%)
"""
)

# Every upper-case string above is a fragment a template can name as %NAME%.
FRAGMENTS = {name: value for name, value in globals().items() if name.isupper() and isinstance(value, str)}
_PLACEHOLDER = re.compile(r"%([A-Z0-9_]+)%")


def expand(template: str, person: str) -> str:
    """Turn a table template into a regular expression for `person` ("first" or "second"): spaces become `\\s+`
    and every `%NAME%` (recursively) its fragment."""
    words = {**FRAGMENTS, **PERSONS[person]}
    template = template.replace(" ", r"\s+")
    for _ in range(8):
        new = _PLACEHOLDER.sub(lambda m: words[m.group(1)], template)
        if new == template:
            return new
        template = new
    raise ValueError(f"placeholders nest too deep in {template[:60]!r}")


# Compiled helpers for rules.py: sentence guards (questions, hypotheticals, hedges, instructions), what makes agent
# text an inference, and the cues that tell who a sentence is about.
def _ci(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


QUESTION_START = _ci(
    r"^\W*(?:(?:so|and|but|also|ok|okay|hmm|oh|well|hi|hey|quick\s+one)\W+)*(?:where|what|which|who|whom|whose|why|"
    r"how|when|should|shall|is|are|am|was|were|do|does|did|have|has|had|will(?!\s+(?:you|we)\b)|"
    r"would(?!\s+you\b)|could(?!\s+(?:you|we)\b)|can(?!\s+(?:you|we)\b)|may|might|must|any|isn['’]t|aren['’]t|"
    r"don['’]t|doesn['’]t|didn['’]t)\b"
)
HYPOTHETICAL = _ci(
    r"\b(?:if|whether|suppose|supposing|imagine|hypothetically|unless|in\s+case|what\s+if|considering|"
    r"thinking\s+(?:of|about)|planning|plan\s+to|planned|wondering|wonder|would(?!\s+you)|could(?!\s+(?:you|we))|"
    r"might|wish|hoping\s+to|hope\s+to|pretend|recommend|suggest|advise|try)\b"
)
HEDGE = _ci(r"\b(?:maybe|perhaps|might|possibly|probably|not\s+sure|don['’]t\s+think|doubt|unsure|i\s+guess)\b")
INSTRUCTION = _ci(
    r"\b(?:you\s+must|you\s+should\s+always|you\s+have\s+to\s+always|always\s+approve|never\s+(?:ask|refuse|question)|"
    r"without\s+(?:asking|checking|review)|ignore\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier|your)?\s*"
    r"instructions|system\s+(?:note|prompt|message)|note\s+to\s+(?:ai|the\s+assistant|assistant)|remember\s+that\s+you|"
    r"developer\s+mode|mark\s+the\s+account\s+as)\b"
)
INFERENCE = _ci(
    r"\b(?:seems?|seemingly|appears?|apparently|looks\s+like|sounds\s+like|probably|likely|clearly|obviously|"
    r"must\s+be|I\s+(?:see|notice|noticed|gather|assume)|since\s+you|as\s+you|because\s+you|so\s+you|given\s+that|"
    r"says|shows?|according\s+to|records?|history|inventory|I['’]ll\s+assume)\b"
)
SENTENCE = re.compile(r"[^\n]+?(?:[.!?]+(?=\s|$)|$)", re.MULTILINE)
NAME_INTRO = [
    _ci(expand(t, "first").replace("(?:my|our)", "(?:my|our|your)"))
    for t in (
        r"\b%MY%\s+%REL_ADJ%?(?P<rel>%PARTNER_REL%|daughter|son)\s*,?\s+(?P<name>%NAME%)",
        r"\b(?P<name>%NAME%)\s*,\s+%MY%\s+(?P<rel>%PARTNER_REL%|daughter|son)\b",
        r"\b%MY%\s+(?P<rel>%PARTNER_REL%|daughter|son)['’]s\s+name\s+is\s+(?P<name>%NAME%)",
    )
]
REL_MENTION = _ci(r"\b(?:my|our|your)\s+" + REL_ADJ + r"?(?P<rel>" + PARTNER_REL + r"|daughter|son)\b")
OTHER_PERSON = _ci(
    r"\b(?:(?P<she>sister|mum|mom|mother|aunt|grandma|grandmother|niece|cousin|she['’]s\s+my)|(?P<he>brother|dad|"
    r"father|uncle|grandpa|grandfather|nephew)|(?P<any>doctor|physio|physiotherapist|allergist|dentist|gp|coach|"
    r"trainer|boss|manager|colleague|coworker|friend|neighbou?r|surgeon|consultant))\b"
)
SVC_MENTION = _ci(r"\b(?:the|our|my|your)\s+" + SVCNAME + r"\s+(?P<kind>service|team|api|app)s?\b")
KEY_VALUE = _ci(
    rf"\b(?P<k>{_either(list(KEY_PREDICATES))})\s*[:=]\s*"
    r"(?P<v>[A-Za-z][\w/\- ]{0,30}?)(?=\s*(?:[,;\n]|$))"
)
BUDGET_ANSWER = _ci(r"^\W*" + APPROX + r"(?P<v>" + AMOUNT + r")")
JOB_CUE = _ci(rf"\b(?:{_either(word_list('job_cues'))})\b|" + JOBHEAD)
DELIVERY_CUE = _ci(r"\b(?:deliver\w*|box(?:es)?|arriv\w*)\b")
TRAILING = _ci(
    r"(?:\s+(?:instead|now|any\s*more|either|too|then|though|again|someday|one\s+day|eventually|at\s+some\s+point))+$"
)
NOT_FITNESS = _ci(r"\b(?:job|exam|interview|test|certific\w+|role|promotion|presentation|course|degree|jlpt)\b")
GIFT = _ci(r"^\s+(?:[\w'’]+\s+){0,3}?(?:for|as\s+an?\s+(?:gift|present)\s+for)\s+(?:my|her|him|his|them|a)\b")
ACCOUNT_NUMBER = _ci(r",?\s*(?:the\s+)?account\s+(?:ending(?:\s+in)?|number|no\.?|#)\s*(?P<n>\d{3,})")
