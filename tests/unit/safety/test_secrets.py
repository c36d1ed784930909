"""The secret detectors: checksums, failing closed, and the catch and false-alarm rates on fixtures/secrets."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
import yaml

import memlab
from memlab import find_secrets
from memlab.events import skip_reason
from memlab.lab.reliability.probes.secret_rates import secret_corpus, secret_filter_rates
from memlab.safety import secret_checks, secrets
from tests.conftest import ROOT, examples, long_turns_and_secret_fixtures

CORPUS = ROOT / "fixtures" / "secrets"


def test_the_corpus_is_big_and_varied_enough():
    credentials = yaml.safe_load((CORPUS / "credentials.yaml").read_text())["credentials"]
    ordinary = yaml.safe_load((CORPUS / "ordinary.yaml").read_text())["ordinary"]
    assert len(credentials) >= 150 and len({c["kind"] for c in credentials}) >= 25
    assert len(ordinary) >= 100
    assert {c["split"] for c in credentials} == {o["split"] for o in ordinary} == {"tuning", "held_out"}
    assert all(c["text"].strip() and c["kind"] for c in credentials)
    texts = [c["text"] for c in credentials] + [o["text"] for o in ordinary]
    assert len(set(texts)) == len(texts)


def test_rates_on_the_corpus():
    """Held-out credentials (written before the detectors, scored only at the end) are caught, ordinary
    technical text is kept."""
    rates = secret_filter_rates()
    assert rates["credentials"] >= 150 and rates["kinds"] >= 25 and rates["ordinary"] >= 100
    assert rates["held_out_caught"] >= 0.95, rates["missed"]
    assert rates["ordinary_flagged"] <= 0.10, rates["flagged"]


def test_rates_are_computed_from_the_given_folder(tmp_path):
    (tmp_path / "credentials.yaml").write_text(
        yaml.safe_dump(
            {
                "credentials": [
                    {"kind": "stripe", "split": "held_out", "text": "sk_live_4eC39HqLyjWDarjtT1zdp7dc is the key"},
                    {"kind": "prose_password", "split": "held_out", "text": "my password is terrible"},
                    {"kind": "aws", "split": "tuning", "text": "key AKIAIOSFODNN7EXAMPLE"},
                ]
            }
        )
    )
    (tmp_path / "ordinary.yaml").write_text(
        yaml.safe_dump(
            {
                "ordinary": [
                    {"split": "tuning", "text": "we ship on Fridays"},
                    {"split": "held_out", "text": "the db password is Falcon42!"},
                ]
            }
        )
    )
    rates = secret_filter_rates(tmp_path)
    assert (rates["held_out_caught"], rates["tuning_caught"], rates["ordinary_flagged"]) == (0.5, 1.0, 0.5)
    assert (rates["held_out_ordinary_flagged"], rates["tuning_ordinary_flagged"]) == (1.0, 0.0)
    assert rates["missed"] == [("held_out", "prose_password", "my password is terrible")]
    assert [text for _, text, _ in rates["flagged"]] == ["the db password is Falcon42!"]


def test_a_missing_corpus_is_named_with_the_fix(tmp_path, monkeypatch):
    """The rates need a labelled corpus, which only a checkout has: a folder without it is named, with the fix."""
    (tmp_path / "credentials.yaml").write_text("credentials: []\n")
    with pytest.raises(memlab.errors.FixtureError, match=r"no ordinary\.yaml there; pass the folder") as raised:
        secret_filter_rates(tmp_path)
    assert str(tmp_path) in str(raised.value)
    nowhere = tmp_path / "installed" / "fixtures" / "secrets"
    monkeypatch.setattr("memlab.lab.reliability.probes.secret_rates.SECRET_CORPUS", nowhere)
    with pytest.raises(memlab.errors.FixtureError, match="run from a memlab checkout") as raised:
        secret_filter_rates()
    assert str(nowhere) in str(raised.value) and "credentials.yaml or ordinary.yaml" in str(raised.value)
    assert secret_corpus(CORPUS) == CORPUS


@pytest.mark.parametrize(
    ("number", "ok"),
    [
        ("4539398259791903", True),
        ("4539398259791904", False),
        ("378282246310005", True),  # the Amex test number
        ("6011111111111117", True),  # a Discover test number
        ("1234567812345670", True),  # passes Luhn, but 1... is no card network
    ],
)
def test_luhn(number, ok):
    assert secret_checks.luhn_ok(number) is ok


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("the visa is 4539 3982 5979 1903", True),
        ("the visa is 4539-3982-5979-1903", True),
        ("ticket 1234 5678 1234 5670 is resolved", False),  # Luhn-valid, no card network starts with 1
        ("order 4539398259791904 shipped", False),
    ],
)
def test_card_numbers_need_luhn_and_a_network(text, found):
    assert ("Payment card" in find_secrets(text)) is found


@pytest.mark.parametrize(
    ("iban", "ok"),
    [
        ("GB82WEST12345698765432", True),  # the ISO 13616 example
        ("DE89370400440532013000", True),
        ("DE89370400440532013001", False),  # check digits do not match
        ("DE8937040044053201300", False),  # one short for Germany
        ("ZZ89370400440532013000", False),  # no such country
        ("BE68539007547034", True),  # the registry's Belgian example
        ("BE82719D7D247CAF", False),  # mod 97 holds, but Belgian account numbers are digits: a hex digest
        ("DE8937040044053201300A", False),  # a letter where Germany has digits
    ],
)
def test_iban_mod_97(iban, ok):
    assert secret_checks.iban_ok(iban) is ok


def test_a_hex_digest_is_not_taken_for_an_iban():
    # 16 hex characters from "be": mod 97 holds for these (letters count as numbers), one digest in ~25,000
    for digest in ("be82719d7d247caf", "be241b3fecd8046e", "be505597391b5d94", "be881c09e8fd9015"):
        assert secret_checks.iban_ok(digest) is False
        assert find_secrets(f"the fix is in commit {digest}, merged yesterday") == []


def test_iban_found_with_spaces_and_not_when_the_checksum_fails():
    assert "IBAN" in find_secrets("pay it to GB82 WEST 1234 5698 7654 32 please")
    assert "IBAN" not in find_secrets("pay it to GB83 WEST 1234 5698 7654 32 please")


def test_scanning_fails_closed(monkeypatch):
    """Whatever breaks inside the scanner, the text is treated as a secret and not stored."""

    def broken():
        raise RuntimeError("dictionary changed size during iteration")

    monkeypatch.setattr(secrets, "_ds_gated", broken)  # what each scan asks for its plugins
    text = f"We deploy the payments service {uuid.uuid4().hex[:6]} with Argo CD."  # never scanned clean before
    assert find_secrets(text) == [secrets.SCAN_FAILED]
    assert skip_reason(memlab.Event("e", "user", datetime(2026, 1, 1, tzinfo=UTC), text)) == "secret"


def test_a_text_found_clean_is_not_scanned_again_and_a_secret_always_is(monkeypatch):
    from memlab.safety import clean_texts

    scanned: list[str] = []

    def counting(text: str) -> list[str]:
        scanned.append(text)
        return find_secrets(text)

    monkeypatch.setattr(clean_texts, "find_secrets", counting)
    clean = f"We moved the staging cluster {uuid.uuid4().hex[:6]} to Frankfurt last week."
    secret = f"my github token is ghp_{uuid.uuid4().hex}abcd for {uuid.uuid4().hex[:4]}"
    for _ in range(3):
        assert clean_texts.holds_secret(clean) is False
        assert clean_texts.holds_secret(secret) is True
    assert scanned.count(clean) == 1 and scanned.count(secret) == 3
    assert clean not in "".join(clean_texts._CLEAN), "the memo keeps digests, not texts"
    assert clean_texts.text_key(clean) in clean_texts._CLEAN, "the memo's key: the one key of a text"
    odd = "a lone surrogate \ud800 in an otherwise ordinary sentence"
    assert clean_texts.holds_secret(odd) is False and clean_texts.text_key(odd) in clean_texts._CLEAN


@pytest.mark.parametrize("text", ["plain", "", "caf\u00e9 \u4e2d\u6587 \U0001f600", "lone \ud800", "\udfff\ud800"])
def test_the_memo_and_the_embedding_cache_key_a_text_alike(text):
    """One key of a text: the memo of texts scanned clean digests a text as the embedding cache keys it."""
    from memlab.embedding.cache import text_key as cache_key
    from memlab.safety import clean_texts

    assert clean_texts.text_key(text) == cache_key(text)


def test_scanning_leaves_detect_secrets_settings_alone():
    """Plugins are called directly: the process-wide detect-secrets settings are never read or swapped."""
    from detect_secrets import settings

    before = settings.get_settings().json()
    assert find_secrets("token ghp_1234567890abcdefghijABCDEFGHIJ123456 for the CI")
    assert settings.get_settings().json() == before


def test_seed_phrases_are_bip39_words_not_sentences_about_them():
    words = "abandon ability able about above absent absorb abstract absurd abuse access accident"
    assert "Wallet seed phrase" in find_secrets(f"my seed phrase is {words}")
    assert "Wallet seed phrase" in find_secrets(f"mnemonic: {words.title().replace(' ', ', ')}")
    assert find_secrets("write down your seed phrase and keep it safe, never share it with anyone online") == []


def test_scan_time_grows_linearly_on_long_odd_text():
    """No pattern backtracks quadratically (a name pattern once took minutes on 100 kB of '1234-')."""
    import time

    for text in ("1234-" * 20_000, "a_" * 50_000, "user:" * 20_000, "=" * 100_000, "1 " * 50_000):
        start = time.perf_counter()
        find_secrets(text)
        assert time.perf_counter() - start < 5, text[:20]


def test_keyword_gate_covers_every_keyword_of_detect_secrets():
    from detect_secrets.plugins.keyword import DENYLIST

    for word in DENYLIST:
        plain = word.replace("_?", "")  # the patterns allow an optional underscore
        assert any(w in plain.lower() for w in secrets.KEYWORD_WORDS), word


@pytest.mark.parametrize(
    "detector", [d for d in secrets._DETECTORS if d[3] is not None], ids=lambda d: f"{d[0]}:{d[1].pattern[:12]}"
)
def test_a_detector_gate_is_never_narrower_than_its_pattern(detector, phases: tuple | None = None):
    """A gate only skips work: every text the pattern matches (drawn from the pattern itself, in any case and
    any script) holds the gate's words once case-folded. `phases`: hypothesis's (the profile's by default)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    kind, pattern, _, gate = detector

    # 25 texts per detector (52 detectors) in CI: the from_regex draws cost most of this file's time. Run once at
    # 300 per detector (and 400 per detect-secrets pattern), every gate held.
    @settings(max_examples=examples(25), deadline=None, suppress_health_check=list(HealthCheck), database=None,
              phases=phases or settings.default.phases)  # fmt: skip
    @given(st.from_regex(pattern))
    def holds(text: str) -> None:
        if pattern.search(text):
            assert gate.search(secrets.fold(text)), (kind, text)

    holds()


# The narrow-gate checks only need the check to fail: hypothesis then shrinks the text it failed on, which is most
# of the CPU such a check takes; that text is never read, so they run without shrinking.
FIND_ONLY = ("explicit", "reuse", "generate")


def find_only() -> tuple:
    from hypothesis import Phase

    return tuple(Phase[name] for name in FIND_ONLY)


def test_the_gate_check_catches_a_narrow_gate():
    import re

    kind, pattern, check, _ = next(d for d in secrets._DETECTORS if d[0] == "PIN")
    with pytest.raises(AssertionError):
        test_a_detector_gate_is_never_narrower_than_its_pattern((kind, pattern, check, re.compile("pin")), find_only())


def test_fold_maps_every_character_ignorecase_equates_with_an_ascii_letter():
    """The gates search `fold(text)`: a character a case-insensitive pattern matches as an ASCII letter (the
    long s, the Kelvin sign, the dotless i) must fold to that letter, or a gate could skip a real match."""
    import re
    import sys

    letter = re.compile("[a-z]", re.IGNORECASE)
    for cp in range(128, sys.maxunicode + 1):
        ch = chr(cp)
        if letter.fullmatch(ch):
            equal = [a for a in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(a, ch, re.IGNORECASE)]
            assert equal and all(a in secrets.fold(ch) for a in equal), hex(cp)


def test_a_pin_written_with_a_dotless_i_is_still_caught():
    assert "PIN" in find_secrets("my pin is 4821")
    assert "PIN" in find_secrets("my pın is 4821")


def _ds_patterns():
    return [(type(p).__name__, p, r) for p in secrets._ds_plugins() for r in getattr(p, "denylist", ())]


@pytest.mark.parametrize("plugin_pattern", _ds_patterns(), ids=lambda t: f"{t[0]}:{t[2].pattern[:12]}")
def test_a_detect_secrets_plugin_gate_is_never_narrower_than_its_patterns(plugin_pattern, phases: tuple | None = None):
    """A plugin is run on a text's lines only when its gate holds on the text: every line a pattern of the
    plugin finds a secret in (drawn from the pattern itself) must hold the gate's words once folded."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    name, plugin, pattern = plugin_pattern
    gate = secrets.ds_gate(name)

    @settings(max_examples=examples(15), deadline=None, suppress_health_check=list(HealthCheck), database=None,
              phases=phases or settings.default.phases)  # fmt: skip
    @given(st.from_regex(pattern))
    def holds(text: str) -> None:
        for line in text.splitlines() or [text]:
            if list(plugin.analyze_string(line)):
                assert secrets.gate_holds(gate, line), (name, line)

    holds()


def test_every_detect_secrets_plugin_has_a_gate():
    assert all(secrets.ds_gate(type(p).__name__) is not None for p in secrets._ds_plugins())
    assert set(secrets._DS_GATES) <= {type(p).__name__ for p in secrets._ds_plugins()}


def _corpus_texts() -> list[str]:
    folder = CORPUS
    texts = [c["text"] for c in yaml.safe_load((folder / "credentials.yaml").read_text())["credentials"]]
    return texts + [o["text"] for o in yaml.safe_load((folder / "ordinary.yaml").read_text())["ordinary"]]


def _passes(gate, texts: list[str]) -> int:
    return sum(secrets.gate_holds(gate, t) for t in texts)


def test_gates_are_derived_from_the_patterns_unless_a_written_one_does_better():
    """A detector's or plugin's gate is read off its patterns (pattern_gates.required_words, as the rule
    extractor's are); a written gate stays only where the derivation reads no word, or where it lets fewer texts
    (lines, for the plugins) of fixtures/secrets through than the derived gate would."""
    texts = _corpus_texts()
    lines = [line for t in texts for line in t.splitlines() if line.strip()]
    for kind, pattern, _, gate in secrets._DETECTORS:
        derived = secrets.derived_gate([pattern])
        if gate != derived:
            assert derived is None or _passes(gate, texts) < _passes(derived, texts), (kind, pattern.pattern[:40])
    for plugin in secrets._ds_plugins():
        name = type(plugin).__name__
        derived = secrets.derived_gate(getattr(plugin, "denylist", ()))
        if name in secrets._DS_GATES:
            assert derived is None or _passes(secrets.ds_gate(name), lines) < _passes(derived, lines), name


def test_a_plugin_runs_only_on_the_lines_that_hold_its_gate(monkeypatch):
    """One gate per plugin, applied per line (not per text and then again per line): a plugin whose words are on
    one line of a turn is not run on its other lines."""
    plugin = next(p for p in secrets._ds_plugins() if type(p).__name__ == "IbmCosHmacDetector")
    seen: list[str] = []
    real = plugin.analyze_string

    def counting(line: str):
        seen.append(line)
        return real(line)

    monkeypatch.setattr(plugin, "analyze_string", counting)
    assert find_secrets("we keep the secret santa list in the wiki\nthe deploy is on friday\nlunch at noon") == []
    assert seen == ["we keep the secret santa list in the wiki"]


def test_the_plugin_gate_check_catches_a_narrow_gate(monkeypatch):
    name, plugin, pattern = next(t for t in _ds_patterns() if t[0] == "StripeDetector")
    monkeypatch.setitem(secrets._DS_GATES, name, secrets.exact_words("sk_live_"))  # misses rk_live_ keys
    secrets.ds_gate.cache_clear()
    try:
        with pytest.raises(AssertionError):
            test_a_detect_secrets_plugin_gate_is_never_narrower_than_its_patterns((name, plugin, pattern), find_only())
    finally:
        secrets.ds_gate.cache_clear()


def test_a_plugin_whose_gate_holds_nowhere_in_a_turn_is_tried_on_no_line(monkeypatch):
    """The plugins are picked once per turn (`_ds_live`: their gate holds somewhere in it), then gated per line."""
    plugin = next(p for p in secrets._ds_plugins() if type(p).__name__ == "IbmCosHmacDetector")
    seen: list[str] = []
    monkeypatch.setattr(plugin, "analyze_string", lambda line: seen.append(line) or iter(()))
    find_secrets("the deploy is on friday\nlunch at noon\nthe wiki has the list")
    assert seen == []
    assert plugin not in [p for p, _ in secrets._ds_live("lunch at noon", secrets.fold("lunch at noon"))]
    assert plugin in [p for p, _ in secrets._ds_live("the secret santa", secrets.fold("the secret santa"))]


def test_picking_plugins_per_turn_finds_what_every_plugin_on_every_line_finds():
    """On long real turns and every secret fixture (files and lines): the same kinds as trying all 24 plugins on
    every line, so the per-turn pick only saves time."""
    texts = long_turns_and_secret_fixtures()
    flagged = 0
    for text in texts:
        every = set(secrets._own_findings(text, secrets.fold(text)))
        for line in text.splitlines():
            if line.strip():
                every.update(secrets._ds_findings(line))
        assert find_secrets(text) == sorted(every), text[:200]
        flagged += bool(every)
    assert flagged > 100, "the fixtures' credentials are found, so equal answers are not all empty"


def test_a_turns_gates_checked_at_once_answer_as_each_gate_alone():
    """`TurnGates` looks each shared gate word up once per turn: for every gate of every detector and plugin,
    on long real turns and the secret fixtures, it answers as `gate_holds` does, gate by gate and all at once."""
    texts = long_turns_and_secret_fixtures()
    gates = [g for *_, g in secrets._DETECTORS] + [g for _, g in secrets._ds_gated()]
    held = 0
    for text in texts:
        folded = secrets.fold(text)
        holds = secrets._turn_gates().holding(text, folded)
        open_gates = secrets._turn_gates().open(text, folded)
        for at, gate in enumerate(gates):
            assert holds(gate) == secrets.gate_holds(gate, text, folded), (gate, text[:120])
            assert (at in open_gates) == holds(gate), (gate, text[:120])
            held += gate is not None and holds(gate)
    assert 0 < held < len(texts) * len(gates), "some gates hold and some do not"
