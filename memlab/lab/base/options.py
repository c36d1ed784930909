"""Typed options: one dataclass per configurable thing (a data set format, a sweep) declares the keys its config
entry may have, each with its type, default, range and a one-line description (`option`). One function
(`check_options`) checks a config's mapping against it before anything is loaded: an unknown key gets the nearest
valid one, a wrong value names the key, the expected type and the fix. The same declaration reads back as rows
(`option_rows`: name, type, default, description), so reference docs come from it and cannot drift from it.

A dataclass may define `check(self, where)` for what spans several keys (a sum of shares, a pair's order); it
runs after every key has its type."""

from __future__ import annotations

import copy
import math
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import MISSING, Field, asdict, dataclass, field, fields, is_dataclass
from typing import Any, Literal, get_args, get_origin, get_type_hints

import yaml

from memlab.errors import ConfigError
from memlab.lab.base.suggest import did_you_mean, unknown_keys

TEXT_CHARS = 1000  # characters of a text option unless it says otherwise
PATH_CHARS = 4096


def option(default: Any = MISSING, doc: str = "", *, low: float | None = None, high: float | None = None,
           choices: Iterable[str] | None = None, min_items: int = 0, chars: int = TEXT_CHARS, blank: bool = True,
           secret: bool = False) -> Any:  # fmt: skip
    """A declared option: its default (none: required), what it does in one line, and its bounds: `low`/`high`
    for numbers (each number of a list too), `choices` for text, `min_items` for a list, `chars` for text,
    `blank=False` for a name that must say something, `secret` for a value never shown in an error."""
    meta = {"doc": doc, "low": low, "high": high, "choices": tuple(choices) if choices is not None else None,
            "min_items": min_items, "chars": chars, "blank": blank, "secret": secret}  # fmt: skip
    if isinstance(default, list | dict) or is_dataclass(default):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return field(default=default, metadata=meta)


class _Wrong(ConfigError):
    """A value of the wrong type or range; check_options adds the fix for its key."""


def shown(value: Any, meta: dict[str, Any] | None = None) -> str:
    if meta and meta.get("secret"):
        return "a value not shown here (it may hold a password)"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number_range(meta: dict[str, Any]) -> str:
    low, high = meta.get("low"), meta.get("high")
    if low is not None and high is not None:
        return f" in {low}..{high}"
    if low is not None:
        return f" >= {low}"
    return f" <= {high}" if high is not None else ""


def _nullable(annotation: Any) -> tuple[list[Any], bool]:
    """The alternatives of a union, and whether None is one of them."""
    if get_origin(annotation) in (typing.Union, types.UnionType):
        args = get_args(annotation)
        return [a for a in args if a is not type(None)], type(None) in args
    return [annotation], False


def describe(annotation: Any, meta: dict[str, Any], *, plural: bool = False) -> str:
    """What a value of this type must be, in words: `a whole number in 1..100`, `a list of text`, `true or false`."""
    alternatives, nullable = _nullable(annotation)
    if len(alternatives) > 1 or nullable:
        return " or ".join([*(describe(a, meta, plural=plural) for a in alternatives), *(["null"] if nullable else [])])
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return ("whole numbers" if plural else "a whole number") + _number_range(meta)
    if annotation is float:
        return ("numbers" if plural else "a number") + _number_range(meta)
    if annotation is str or origin is Literal:
        choices = list(args) if origin is Literal else meta.get("choices")
        if choices:
            return f"{'values from' if plural else 'one of'} {list(choices)}"
        limit = f" (at most {meta['chars']} characters)" if meta.get("chars", TEXT_CHARS) != TEXT_CHARS else ""
        return ("non-empty text" if not meta.get("blank", True) else "text") + limit
    if origin is list:
        inner = describe(args[0] if args else Any, {**meta, "min_items": 0}, plural=True)
        size = meta.get("min_items", 0)
        text = f"{'a non-empty list' if size == 1 else 'a list'} of {inner}"
        text += f" (at least {size})" if size > 1 else ""
        return f"lists ({text})" if plural else text
    if is_dataclass(annotation):
        text = f"a mapping of {', '.join(f.name for f in fields(annotation))}"
        return f"mappings ({text})" if plural else text
    return "mappings" if plural else "a mapping" if origin is dict or annotation is dict else "any value"


def _fits(value: Any, annotation: Any) -> bool:
    """Whether the value has the outer shape of this alternative (a list, a mapping or one value)."""
    origin = get_origin(annotation)
    if origin is list:
        return isinstance(value, list)
    if is_dataclass(annotation) or origin is dict or annotation is dict:
        return isinstance(value, dict)
    return not isinstance(value, list | dict)


def check_value(where: str, value: Any, annotation: Any, meta: dict[str, Any] | None = None) -> Any:
    """The value checked against its type and bounds (ints stay ints, a float option takes an int as a float);
    a mismatch is a ConfigError naming `where`, the expected type and the value."""
    meta = {"chars": TEXT_CHARS, "blank": True, "min_items": 0, **(meta or {})}
    alternatives, nullable = _nullable(annotation)
    if value is None and nullable:
        return None
    if len(alternatives) == 1 and not nullable:
        return _one(where, value, alternatives[0], meta)
    for alternative in alternatives:
        if _fits(value, alternative):
            try:
                return _one(where, value, alternative, meta)
            except _Wrong:
                if isinstance(value, list | dict):  # the list or mapping it is: name the item that is wrong
                    raise
                break
    raise _Wrong(f"{where} must be {describe(annotation, meta)}, got {shown(value, meta)}")  # the whole type


def _one(where: str, value: Any, annotation: Any, meta: dict[str, Any]) -> Any:
    origin, args = get_origin(annotation), get_args(annotation)

    def wrong() -> _Wrong:
        return _Wrong(f"{where} must be {describe(annotation, meta)}, got {shown(value, meta)}")

    if annotation is Any:
        return value
    if annotation is bool:
        if not isinstance(value, bool):
            raise wrong()
        return value
    if annotation in (int, float):
        whole = isinstance(value, int) and not isinstance(value, bool)
        number = whole or (isinstance(value, float) and math.isfinite(value))
        if not (whole if annotation is int else number):
            raise wrong()
        low, high = meta.get("low"), meta.get("high")
        if (low is not None and value < low) or (high is not None and value > high):
            raise wrong()
        return float(value) if annotation is float else value
    if annotation is str or origin is Literal:
        choices = args if origin is Literal else meta.get("choices")
        if not isinstance(value, str) or len(value) > meta["chars"] or (not meta["blank"] and not value.strip()):
            raise wrong()
        if choices and value not in choices:
            raise _Wrong(f"{where} must be one of {list(choices)}, got {shown(value, meta)}"
                         f"{did_you_mean(value, choices)}")  # fmt: skip
        return value
    if origin is list:
        if not isinstance(value, list) or len(value) < meta.get("min_items", 0):
            raise wrong()
        item = args[0] if args else Any
        return [check_value(f"{where}[{i}]", v, item, {**meta, "min_items": 0}) for i, v in enumerate(value)]
    if is_dataclass(annotation):
        if not isinstance(value, dict):
            raise wrong()
        return check_options(annotation, value, where, owner=f"`{where.rsplit('.', 1)[-1]}`")
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise wrong()
        return value
    raise TypeError(f"option type {annotation!r} is not one check_options knows")


def required(spec: Field) -> bool:
    return spec.default is MISSING and spec.default_factory is MISSING


def _default(spec: Field) -> Any:
    return spec.default_factory() if spec.default_factory is not MISSING else spec.default


def yaml_text(value: Any) -> str:
    """A value as a config writes it: `[2, 3, 5]`, `true`, `none` for null."""
    if value is None:
        return "none"
    if is_dataclass(value):
        value = asdict(value)
    return yaml.safe_dump(value, default_flow_style=True, width=10**6, sort_keys=False).strip().removesuffix(
        "\n...").strip()


def _fix(spec: Field) -> str:
    """How to put a wrong value right: an example (the default), or leave the key out."""
    if required(spec):
        return f"`{spec.name}` is required: {spec.metadata.get('doc') or 'see the reference'}"
    default = _default(spec)
    if default is None:
        return f"or leave `{spec.name}` out (default: none)"
    example = yaml_text(default)
    if len(example) > 40:
        return f"or leave `{spec.name}` out for the default"
    return f"write e.g. `{spec.name}: {example}` (the default) or leave it out"


def check_options(cls: type, values: Any, where: str, *, owner: str, also: Iterable[str] = (),
                  missing_ok: bool = False, unknown_note: Callable[[list[str]], str] | None = None) -> Any:  # fmt: skip
    """`values` (a config mapping) as an instance of the options dataclass `cls`, after checking that every key is
    declared (`also`: keys the caller reads itself, named among the known ones), every value has its type and
    bounds, every required key is there (`missing_ok`: absent ones become None, for an entry never loaded) and
    `cls.check` holds. `where` names the entry (`ci.yaml: options.answer`), `owner` what reads it (`the answer
    sweep`, `format judged`)."""
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise ConfigError(f"{where} must be a mapping of settings, got {shown(values)}")
    declared = {spec.name: spec for spec in fields(cls)}
    extra = sorted(map(str, set(values) - set(declared)))
    if extra:
        known = sorted({*declared, *also})
        note = unknown_note(extra) if unknown_note is not None else ""
        raise ConfigError(f"{where}: {unknown_keys(extra, known)} for {owner}; known: {known}{note}")
    missing = [name for name, spec in declared.items() if required(spec) and values.get(name) is None]
    if missing and not missing_ok:
        needs = ", ".join(f"`{m}` ({declared[m].metadata.get('doc', '')})" for m in missing)
        raise ConfigError(f"{where}: {owner} needs {needs}")
    hints = get_type_hints(cls)
    given: dict[str, Any] = {name: None for name in missing}
    for key, value in values.items():
        if key in missing:
            continue
        try:
            given[key] = check_value(f"{where}.{key}", value, hints[key], dict(declared[key].metadata))
        except _Wrong as exc:
            raise ConfigError(f"{exc}; {_fix(declared[key])}") from None
    instance = cls(**given)
    check = getattr(instance, "check", None)
    if callable(check) and not (missing and missing_ok):
        check(where)
    return instance


@dataclass(frozen=True)
class OptionRow:
    """One option as data: what reads it (a format, a sweep), its key, type, default and what it does."""

    owner: str
    name: str
    type: str
    default: str
    description: str


def option_rows(cls: type, owner: str) -> list[OptionRow]:
    """The options dataclass `cls` as rows, in declaration order (a reference table of its keys)."""
    hints = get_type_hints(cls)
    return [OptionRow(owner, spec.name, describe(hints[spec.name], dict(spec.metadata)),
                      "required" if required(spec) else yaml_text(_default(spec)), spec.metadata.get("doc", ""))
            for spec in fields(cls)]  # fmt: skip


__all__ = ["OptionRow", "check_options", "check_value", "describe", "option", "option_rows"]
