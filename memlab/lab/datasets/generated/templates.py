"""Offline generated questions: the rule fact extractor reads each session, and each fact it finds becomes its
predicate's question from a template (`question_templates.yaml`), with the fact's quoted event as the evidence.
No model, no network: the same sessions and templates always give the same questions.

The generator's id is `rule-templates@<first 10 hex of the templates' SHA-1>`, so a changed template is a new
generator and its questions do not pass for the old ones. A fact whose predicate has no template is counted by
predicate (`Generation.skipped["no template: <predicate>"]`), and a question that would hold the fact's value (the
answer) is dropped and counted (`"answer in the question"`)."""

from __future__ import annotations

import hashlib
import json
import re
import string
from dataclasses import dataclass
from pathlib import Path

from memlab.errors import ConfigError
from memlab.facts.extractors.rules import RuleExtractor
from memlab.facts.registry import PredicateRegistry, default_registry
from memlab.lab.base.suggest import did_you_mean
from memlab.lab.base.yaml_bounds import load_yaml_file
from memlab.lab.datasets.generated.written import Generation, add_question, ask_times
from memlab.lab.datasets.model import Dataset

DEFAULT_TEMPLATES = Path(__file__).with_name("question_templates.yaml")
NO_TEMPLATE = "no template: "
LEAKED = "answer in the question"


@dataclass(frozen=True)
class QuestionTemplates:
    """Question templates by predicate, and the generator id they make."""

    templates: dict[str, str]
    generator: str


def load_templates(path: str | Path = DEFAULT_TEMPLATES,
                   registry: PredicateRegistry | None = None) -> QuestionTemplates:  # fmt: skip
    """Templates from YAML (`templates: {predicate: "What is {whose} diet?"}`); every predicate must be one the
    registry knows, and every template a question whose only field is `{whose}`."""
    path, registry = Path(path), registry or default_registry()
    if not path.is_file():
        raise ConfigError(f"{path}: no such templates file; give a YAML file of `templates: {{predicate: "
                          "question}`")  # fmt: skip
    data = load_yaml_file(path)  # bounded as a config is (size, aliases, nesting): the templates file is the user's
    raw = data.get("templates") if isinstance(data, dict) else None
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{path}: expected a `templates` mapping of predicate -> question, e.g. `diet: What is "
                          "{whose} diet?`")  # fmt: skip
    for predicate, template in raw.items():
        where = f"{path}: templates.{predicate}"
        if not registry.knows(str(predicate)):
            raise ConfigError(f"{where}: {predicate!r} is not a registry predicate"
                              f"{did_you_mean(predicate, registry.names())}; use one of the registry's names")
        if not isinstance(template, str) or not template.strip().endswith("?"):
            raise ConfigError(f"{where}: a template is one question ending in '?', got {template!r}")
        fields = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
        if fields - {"whose"}:
            raise ConfigError(f"{where}: unknown field(s) {sorted(fields - {'whose'})}; the only field is {{whose}} "
                              "(the subject's possessive: my, my partner's)")  # fmt: skip
    templates = {str(k): v.strip() for k, v in raw.items()}
    digest = hashlib.sha1(json.dumps(templates, sort_keys=True).encode("utf-8")).hexdigest()[:10]
    return QuestionTemplates(templates, f"rule-templates@{digest}")


def possessive(subject: str) -> str:
    """A fact's subject as the possessive a question uses: user -> my, user.partner -> my partner's,
    service:payments -> the payments service's."""
    if subject == "user":
        return "my"
    if subject.startswith("user."):
        return f"my {subject[5:].replace('_', ' ')}'s"
    kind, sep, name = subject.partition(":")
    return f"the {name} {kind.replace('_', ' ')}'s" if sep else f"{subject}'s"


def holds_answer(question: str, value: str) -> bool:
    """Whether the question holds the value as a whole word or phrase, in any case."""
    return bool(value.strip()) and re.search(rf"(?<!\w){re.escape(value.strip())}(?!\w)", question, re.I) is not None


def template_questions(source: Dataset, templates: QuestionTemplates | None = None,
                       registry: PredicateRegistry | None = None) -> Generation:  # fmt: skip
    """One question per (user, predicate question) from the facts the rule extractor finds in every session of
    `source`, each fact's event its evidence. `made` counts facts turned into questions by predicate."""
    registry = registry or default_registry()
    templates = templates or load_templates(registry=registry)
    generation = Generation(templates.generator)
    asked = ask_times(source)
    extractor = RuleExtractor()
    for session in source.sessions():
        events = [e for e in session.events if not e.partial and e.text and e.text.strip()]
        for fact in extractor.extract(events, session_id=session.id, registry=registry):
            template = templates.templates.get(fact.predicate)
            if template is None:
                generation.skipped[NO_TEMPLATE + fact.predicate] += 1
                continue
            question = template.format(whose=possessive(fact.subject))
            question = question[:1].upper() + question[1:]
            if holds_answer(question, fact.value):
                generation.skipped[LEAKED] += 1
                continue
            add_question(generation, session.app_name, session.user_id, question,
                         asked[(session.app_name, session.user_id)], (session.id, fact.event_id))  # fmt: skip
            generation.made[fact.predicate] += 1
    return generation
