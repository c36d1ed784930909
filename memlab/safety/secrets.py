"""Credentials in chat text: what `find_secrets` looks for.

Two sources of findings. detect-secrets' shape plugins, built once and called directly: its `scan_line` reads
process-wide settings that `transient_settings` swaps on every call, which raced under threads (exceptions, and
scans that silently found nothing in a known key). And memlab's own detectors for what those plugins miss in
conversation: newer token formats, URL credentials, auth headers, config assignments, passwords and passphrases in
prose (in English and the other common European languages: memlab.safety.secret_shapes), base64 values that decode
to a private key or a Basic `user:password`, one-time and recovery codes, card numbers (Luhn) and IBANs (mod 97).

The checks a match must pass (checksums, password and key shapes, placeholders) are in secret_checks.py.

Scanning fails closed: if anything goes wrong while scanning, the text is reported as holding a secret, so it is
never stored silently. The workbench measures the filter on a labelled corpus
(memlab.lab.reliability.probes.secret_rates)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from functools import cache

from detect_secrets.filters import heuristic as h

import memlab.safety.secret_shapes as shapes
from memlab.safety.pattern_gates import Gate, TurnGates, WordGate, exact_words, fold, required_words, scan
from memlab.safety.secret_checks import (
    PLACEHOLDER,
    basic_base64,
    card_match,
    config_value,
    context_token,
    env_secret,
    iban_match,
    key_body,
    login_pair,
    not_placeholder,
    pem_body,
    prose_password,
    seed_words,
    url_password,
    words_passphrase,
)

SCAN_FAILED = "Scan failed (treated as a secret)"
I = re.IGNORECASE  # noqa: E741

# detect-secrets plugins that look for credentials by their shape, as (module, class). The entropy plugins are
# left out on purpose: on free conversational text they flag almost every sentence.
_DS_PLUGINS = (
    ("artifactory", "ArtifactoryDetector"),
    ("aws", "AWSKeyDetector"),
    ("azure_storage_key", "AzureStorageKeyDetector"),
    ("basic_auth", "BasicAuthDetector"),
    ("cloudant", "CloudantDetector"),
    ("discord", "DiscordBotTokenDetector"),
    ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"),
    ("ibm_cloud_iam", "IbmCloudIamDetector"),
    ("ibm_cos_hmac", "IbmCosHmacDetector"),
    ("jwt", "JwtTokenDetector"),
    ("keyword", "KeywordDetector"),
    ("mailchimp", "MailchimpDetector"),
    ("npm", "NpmDetector"),
    ("openai", "OpenAIDetector"),
    ("private_key", "PrivateKeyDetector"),
    ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"),
    ("slack", "SlackDetector"),
    ("softlayer", "SoftlayerDetector"),
    ("square_oauth", "SquareOAuthDetector"),
    ("stripe", "StripeDetector"),
    ("telegram_token", "TelegramBotTokenDetector"),
    ("twilio", "TwilioKeyDetector"),
)

# The plugin instances, built once at import (they hold only compiled patterns, so sharing them is safe).
_PLUGINS = tuple(getattr(importlib.import_module(f"detect_secrets.plugins.{m}"), name)() for m, name in _DS_PLUGINS)


def _ds_plugins() -> tuple:
    """The detect-secrets plugin instances."""
    return _PLUGINS


# Every pattern of detect-secrets' KeywordDetector (its DENYLIST: api_key, passwd, secret, contraseña, ...)
# holds one of these words; a test checks the list against the installed DENYLIST.
KEYWORD_WORDS = ("key", "pass", "pwd", "secret", "contrase")


def derived_gate(patterns) -> WordGate | None:
    """The gate read off the patterns themselves (`pattern_gates.required_words`: words one of which every match
    holds, so it is never narrower than they are), or None when some pattern requires no word."""
    words = [required_words(p) for p in patterns]
    return None if not words or None in words else WordGate(tuple(sorted(frozenset().union(*words))))


# A gate per detect-secrets plugin whose patterns require no word the derivation can read (classes, short
# prefixes), or whose derived gate lets more lines of fixtures/secrets through than this one: a tuple lists words
# one of which every match holds once case-folded; a str is a regex every folded match holds; exact_words(...)
# lists words a match holds as written (for case-sensitive patterns). Every other plugin's gate is derived from
# its patterns (`ds_gate`). Tests check each written gate is needed and never narrower than its plugin.
_DS_GATES: dict[str, tuple[str, ...] | str | WordGate] = {
    "ArtifactoryDetector": exact_words("AKC", "AP"),
    "AWSKeyDetector": ("a3t", "abia", "acca", "akia", "asia", "aws"),
    "CloudantDetector": r"cl(?:ou)?(?:dant)?[_-]?(?:api)?(?:key|pw|pass|token)|\.cloudant\.com",
    "DiscordBotTokenDetector": r"\.[a-z\d_-]{6}\.",
    "GitHubTokenDetector": exact_words("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "GitLabTokenDetector": exact_words("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "GR1348941", "glcbt-", "glimt-",
                                 "glptt-", "glagent-", "gloas-"),
    "KeywordDetector": KEYWORD_WORDS,
    "SoftlayerDetector": r"s(?:oftlayer|l)[_-]?(?:api)?[_-]?(?:key|pwd|pass|token)|softlayer",
    "TelegramBotTokenDetector": r"\d{8}:",
    "TwilioKeyDetector": exact_words("AC", "SK"),
}  # fmt: skip


@cache
def ds_gate(plugin_name: str) -> re.Pattern | WordGate | None:
    """The gate of one detect-secrets plugin: written in _DS_GATES, else derived from its patterns (None: the
    plugin runs on every line)."""
    needs = _DS_GATES.get(plugin_name)
    if needs is None:
        plugin = next(p for p in _ds_plugins() if type(p).__name__ == plugin_name)
        return derived_gate(getattr(plugin, "denylist", ()))
    if isinstance(needs, str):
        return re.compile(needs)
    return needs if isinstance(needs, WordGate) else WordGate(needs)


def gate_holds(gate: re.Pattern | WordGate | None, text: str, folded: str | None = None) -> bool:
    """Whether `gate` lets `text` through (`folded` is fold(text), when the caller has it already)."""
    if gate is None:
        return True
    if isinstance(gate, WordGate) and gate.as_written:
        return gate.search(text)
    return bool(gate.search(fold(text) if folded is None else folded))


@cache
def _ds_gated() -> tuple[tuple[object, Gate], ...]:
    """Each detect-secrets plugin with its gate, paired once."""
    return tuple((plugin, ds_gate(type(plugin).__name__)) for plugin in _ds_plugins())


@cache
def _turn_gates() -> TurnGates:
    """The gates of every detector and detect-secrets plugin, built once (after both are defined)."""
    return TurnGates([g for *_, g in _DETECTORS] + [g for _, g in _ds_gated()])


def _ds_live(text: str, folded: str, open_gates: frozenset[int] | None = None) -> tuple:
    """The detect-secrets plugins, with their gates, whose gate holds somewhere in `text` (`folded`: fold(text);
    `open_gates`: the turn's open gates, `TurnGates.open`, when the caller has them). A gate found on no part of
    the text is found on none of its lines, so the others need not be tried line by line (24 gate checks on each
    of a long turn's lines cost more than the plugins that run)."""
    if open_gates is None:
        open_gates = _turn_gates().open(text, folded)
    first, gated = len(_DETECTORS), _ds_gated()
    return tuple(gated[i - first] for i in sorted(open_gates) if i >= first)


def _ds_findings(line: str, gated: tuple | None = None) -> Iterator[str]:
    """detect-secrets' plugins (`gated`: (plugin, gate) pairs, all by default) on one line, each only if its gate
    holds on the line (the one place the plugin gates are applied), with the heuristic filters its `scan_line`
    applies by default. Only pure functions are called: nothing here reads or writes detect-secrets' global
    settings."""
    folded = fold(line)
    for plugin, gate in _ds_gated() if gated is None else gated:
        if not gate_holds(gate, line, folded):
            continue
        for secret in plugin.analyze_string(line):
            if (
                h.is_indirect_reference(line)
                or h.is_sequential_string(secret)
                or h.is_potential_uuid(secret)
                or h.is_likely_id_string(secret, line, plugin)
                or h.is_templated_secret(secret)
                or h.is_prefixed_with_dollar_sign(secret)
                or h.is_not_alphanumeric_string(secret)
                or PLACEHOLDER.search(secret)
            ):
                continue
            yield plugin.secret_type


# --------------------------------------------------------------------------------------------------- detectors

Check = Callable[[re.Match], bool]
_PW_WORD = r"(?:pass(?:word|wd|code|phrase)?|pwd|pw|pword|unlock phrase)"
_TOKEN_CHARS = r"[A-Za-z0-9_\-+/=.~]"
_PW_NEEDS = ("pass", "pwd", "pw", "unlock phrase")  # every match of _PW_WORD holds one of these
_B64_40 = r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/])"


def _d(
    kind: str, *parts: str, check: Check | None = None, flags: int = 0, needs: tuple[str, ...] | str | None = None
) -> tuple[str, re.Pattern, Check | None, re.Pattern | WordGate | None]:
    """A detector: its kind, the pattern (its parts joined as alternatives), an optional check of a match, and a
    gate searched in the case-folded text first (it only saves time: the full pattern is costly on long turns).
    The gate is derived from the pattern (`derived_gate`); `needs` (words one of which every match contains, or
    a regex every match contains) is written only where the derivation reads no word, or its gate lets more texts
    of fixtures/secrets through. Tests check both, and draw texts from each pattern to check its gate holds."""
    pattern = re.compile("|".join(parts), flags)
    gate: re.Pattern | WordGate | None = derived_gate([pattern])
    if isinstance(needs, str):
        gate = re.compile(needs)
    elif needs:
        gate = WordGate(needs)
    return kind, pattern, check, gate


# Prefixed formats need no context; bare values (hex, base64, digits) need a word next to them.
_DETECTORS: list[tuple[str, re.Pattern, Check | None, re.Pattern | WordGate | None]] = [
    # cloud
    _d("AWS access key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", needs=("akia", "asia", "abia", "acca")),
    _d("AWS secret key", rf"\baws.{{0,25}}?secret.{{0,30}}?{_B64_40}", rf"\bsecret\s*access\s*key\b.{{0,30}}?{_B64_40}",
       flags=I),
    _d("Azure key", r"\b(?:AccountKey|SharedAccessKey)\s*=\s*[A-Za-z0-9+/=]{20,}", flags=I),
    _d("Azure SAS", r"\bSharedAccessSignature\s+\S*sig=", r"[?&]sig=[A-Za-z0-9%+/=]{20,}",
       r"\bsig=[A-Za-z0-9%+/]{30,}"),
    _d("Azure client secret", r"(?<![\w~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~])", needs=("q~",)),
    _d("GCP service account key", r"\bprivate_key_id[\"']?\s*(?:[:=]|is)?\s*[\"']?[0-9a-f]{40}\b", flags=I),
    _d("Google OAuth", r"\bya29\.[A-Za-z0-9_-]{20,}", r"\b1//0[A-Za-z0-9_-]{30,}", r"\bGOCSPX-[A-Za-z0-9_-]{20,}"),
    _d("Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    _d("Cloud platform token", r"\bdo[por]_v1_[0-9a-f]{64}\b", r"\bHRKU-[A-Za-z0-9_-]{20,}",
       r"\bfo1_[A-Za-z0-9_-]{20,}", r"\bnfp_[A-Za-z0-9]{30,}", r"\bsbp_[0-9a-f]{40}\b",
       r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}"),
    # version control, registries, CI, secret stores
    _d("GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{36,}", r"\bgithub_pat_[A-Za-z0-9_]{40,}",
       needs=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _d("GitLab token", r"\bgl(?:pat|dt|rt|ptt|cbt|soat|ft|imt|agent|oas)-[A-Za-z0-9_-]{20,}", needs=r"gl[a-z]+-"),
    _d("npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    _d("PyPI token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    _d("Docker token", r"\bdckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}"),
    _d("CI token", r"\bCCIPAT_[A-Za-z0-9]{20,}_[0-9a-f]{40}\b", r"\bbkua_[0-9a-f]{40}\b"),
    _d("Vault token", r"\bhv[sbr]\.[A-Za-z0-9_-]{20,}", needs=("hvs.", "hvb.", "hvr.")),
    # payment
    _d("Stripe key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}", r"\bwhsec_[A-Za-z0-9+/=]{24,}",
       needs=("_live_", "_test_", "whsec_")),
    _d("Square/Braintree token", r"\bsq0(?:atp|csp)-[A-Za-z0-9_-]{22,}", r"\bEAAA[A-Za-z0-9_-]{60,}",
       r"\baccess_token\$production\$[a-z0-9]{16}\$[0-9a-f]{32}"),
    _d("Shopify token", r"\bshp(?:at|ss|ca|pa)_[0-9a-fA-F]{32}\b"),
    _d("Payment card", r"(?<![\w-])(?<!\d{4}[ -])(?:\d[ -]?){12,18}\d(?![\w-]|[ -]\d{4}\b)", check=card_match,
       needs=r"\d[ -]?\d"),
    _d("IBAN", r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b", check=iban_match, flags=I,
       needs=r"\d\d"),
    # chat, mail, AI and other SaaS
    _d("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", r"\bxapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{20,}",
       r"hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+"),
    _d("Discord webhook", r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{30,}"),
    _d("Discord bot token", r"\b[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,}",
       needs=r"\.[a-z\d_-]{6}\."),
    _d("SendGrid key", r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b"),
    _d("Mailgun key", r"\bkey-[0-9a-f]{32}\b", r"\b[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}\b",
       needs=("-",)),
    _d("AI API key", r"\bsk-(?:proj-|ant-(?:api|admin)\d\d-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
       r"\bhf_[A-Za-z]{30,}\b", r"\bgsk_[A-Za-z0-9]{40,}", r"\bxai-[A-Za-z0-9]{40,}", r"\bpplx-[A-Za-z0-9]{40,}",
       r"\br8_[A-Za-z0-9]{30,}"),
    _d("SaaS token", r"\bATATT3[A-Za-z0-9_=-]{50,}", r"\bPMAK-[0-9a-f]{24}-[0-9a-f]{34}\b",
       r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,}", r"\bgl(?:sa|c)_[A-Za-z0-9_+/=]{32,}", r"\bsecret_[A-Za-z0-9]{43}\b",
       r"\bntn_[A-Za-z0-9]{40,}", r"\bsntr[ysu]_[A-Za-z0-9_=+/-]{30,}", r"\bNRAK-[A-Z0-9]{27}\b",
       r"\bdapi[0-9a-f]{32}\b",
       r"\bfigd_[A-Za-z0-9_-]{30,}", r"\bpul-[0-9a-f]{40}\b", r"\bpscale_(?:tkn|pw)_[A-Za-z0-9_-]{30,}",
       r"\bdp\.(?:st|ct|sa|scim)\.[A-Za-z0-9_.-]{30,}", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b",
       r"\bCFPAT-[A-Za-z0-9_-]{40,}",
       needs=("atatt3", "pmak-", "lin_", "glsa_", "glc_", "secret_", "ntn_", "sntr", "nrak-", "dapi", "figd_", "pul-",
              "pscale_", "dp.", "age-secret-key-1", "cfpat-")),
    _d("Datadog key", r"\b(?:datadog|dd)\b.{0,40}?\b(?:[0-9a-f]{32}|[0-9a-f]{40})\b", flags=I,
       needs=("datadog", "dd")),
    # a prefix, an underscore and a long body of mixed case and digits: the shape of most newer API tokens
    _d("Prefixed API token",
       r"\b[A-Za-z][A-Za-z0-9]{1,9}_(?:[A-Za-z0-9]{2,8}_)?(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*\d)"
       r"[A-Za-z0-9]{30,}\b", needs=("_",)),
    # private keys, URLs, headers, cookies, config
    _d("Private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", r"\bPuTTY-User-Key-File-\d"),
    _d("Private key body", r"(?:^|\n)[ \t]*(?:[A-Za-z0-9+/]{40,120}[ \t]*\r?\n[ \t]*){2,}[A-Za-z0-9+/]*={0,2}",
       check=pem_body, needs=r"[a-z0-9+/]{40}"),
    _d("Private key body", r"\bMII[A-Za-z0-9+/]{60,}={0,2}", r"\bb3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=]{20,}"),
    # any base64 run that decodes to a private key (EC, RSA, DSA, PKCS#8, OpenSSH), armor or not
    _d("Private key body", r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40,}", check=key_body, needs=r"[a-z0-9+/]{40}"),
    _d("Basic credentials in base64",
       r"(?<![\w+/-])(?P<v>(?=[A-Za-z0-9+/]*[A-Z0-9])[A-Za-z0-9+/]{8,}={0,2})(?![\w+/=-])", check=basic_base64,
       needs=r"[a-z0-9+/]{8}"),
    _d("URL credentials", r"\b[a-z][a-z0-9+.-]{1,20}://[^\s/:@]*(?:@[^\s/:@]+)?:(?P<v>[^\s/@]{3,})@[\w.-]+",
       check=url_password, flags=I),
    _d("Auth header",
       r"\b(?:proxy-)?authorization\s*[:=]\s*(?:basic|bearer|token|digest|apikey|api-key|key|sso-key|hmac)?\s*"
       r"[\"']?[A-Za-z0-9._~+/=:-]{12,}",
       r"\bx-(?:[a-z0-9]+-)*(?:api-?key|auth-?token|access-?token|token|secret|key)[\"']?\s*[:=]\s*[\"']?"
       r"[A-Za-z0-9._~+/=-]{12,}", flags=I, needs=("authorization", "x-")),
    _d("Auth header", r"\bbearer\s+(?P<v>[A-Za-z0-9._~+/=-]{20,})", check=context_token, flags=I),
    _d("Session cookie", r"\b(?:set-)?cookie\s*:\s*[\w.-]+=[^\s;]{16,}",
       r"\b(?:[\w.]{0,30}?sess(?:ion)?(?:id)?|[\w.]{0,30}?sid|jsessionid|phpsessid|auth_token|remember_token|access_token"
       r"|refresh_token|id_token)=[A-Za-z0-9%._~+/-]{16,}", flags=I),
    _d("JWT", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}"),
    _d("Config secret",
       r"(?P<name>(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{0,40}?(?:pass(?:word|wd)?|pwd|secret|token|api_?key|apikey|access_?key|app_?key"
       r"|private_?key|auth_?token|credentials?|client_?secret|secret_?key)\d*)[\"']?[ \t]*(?P<op>=|:)[ \t]*[\"']?"
       r"(?P<v>[^\s\"',;]+)", check=config_value, flags=I),
    _d("Config secret",
       r"(?P<name>\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_?(?:KEY|TOKEN|SECRET|PASS(?:WORD)?|PWD|AUTH)(?:_[A-Z0-9]+)*)"
       r"[\"']?[ \t]*(?:=|:)[ \t]*[\"']?(?P<v>[^\s\"',;]+)", check=env_secret),
    _d("Password on a command line",
       r"(?:--(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token)[= ]"
       r"|\bmysql(?:dump|admin)?\b[^\n]*?\s-p|\bsshpass\s+-p\s*|\bredis-cli\b[^\n]*?\s-a\s+"
       r"|\b(?:docker|podman|helm|oras)\s+(?:registry\s+)?login\b[^\n]*?\s-p\s+)[\"']?(?P<v>[^\s\"']{4,})",
       check=not_placeholder, needs=("--", "mysql", "sshpass", "redis-cli", "login")),
    # one-time passwords: TOTP seeds and codes
    _d("OTP secret", r"\botpauth://\S*secret=[A-Z2-7]{16,}",
       r"\b(?:2fa|mfa|totp|otp|authenticator|two[- ]factor)\s+(?:setup\s+)?(?:secret|seed|key|setup key)\b.{0,30}?"
       r"\b(?:[A-Z2-7]{16,}|[a-z2-7]{4}(?: [a-z2-7]{4}){3,})\b",
       r"\b(?:totp|otp|2fa)\s+seed\b.{0,20}?\b[A-Z2-7]{16,}\b", flags=I,
       needs=("otp", "2fa", "mfa", "authenticator", "two")),
    _d("One-time code",
       r"(?:\b(?:2fa|mfa|otp|totp|2-step|two[- ]factor|authenticator)\b(?:\s+(?:code|token|pin|password|passcode))?"
       r"|\b(?:verification|security|login|sign[- ]in|one[- ]time|confirmation|sms|auth(?:entication)?|access)\s+"
       r"(?:code|token|pin|password|passcode)\b)"
       r"[^\d\n.]{0,25}?(?:\b[A-Z]-|(?<![\d.:/-]))(?:\d{3}[ -]\d{3}|\d{6,8})(?![\d.:/-])", flags=I),
    # apart: a code written before its words gives the pattern no word to start from (`pattern_gates.scan`), and
    # joined to the one above it was tried at every character of a turn that has any of their words
    _d("One-time code",
       r"(?<![\d.:/-])\d{6,8}(?![\d.:/-])\s+(?:(?:is|as)\s+(?:the|your|my)\s+(?:one[- ]time|verification|2fa|otp|mfa"
       r"|login|security|sign[- ]in)|to\s+(?:log ?in|sign ?in|verify|confirm))", flags=I),
    _d("Recovery codes",
       r"\b(?:recovery|backup|scratch|emergency|rescue)\s+(?:codes?|keys?)\b.{0,40}?(?:\b[a-z0-9]{4,5}-[a-z0-9]{4,5}\b"
       r"|\b\d{4} \d{4}\b|\b\d{8,10}\b|\b[A-Z0-9]{4}(?:-[A-Z0-9]{4}){3,}\b)", flags=I | re.S),
    _d("Recovery codes", r"\b\d{6}(?:-\d{6}){7}\b", needs=r"\d-\d"),  # a BitLocker recovery key
    _d("Wallet seed phrase", r"\b(?:seed|recovery|secret recovery|backup)\s+(?:phrase|words)|\bmnemonic\b",
       check=seed_words, flags=I),
    # passwords in prose
    _d("Credential in prose",
       rf"\b{_PW_WORD}(?:'s|\b)"
       r"(?:[ \t]+(?:for|of|to|on)[ \t]+(?:(?:the|my|our|your)[ \t]+)?(?!(?:is|was)\b)[\w.@-]+"
       r"(?:[ \t]+(?!(?:is|was)\b)[\w.@-]+)?)?"
       r"(?P<sep>[ \t]*(?:'s|\bis|\bwas|:|=|-)(?:[ \t]*:)?[ \t]*|[ \t]+)"
       r"(?:(?:still|now|just|currently|probably|(?:changed|set|reset|updated)[ \t]+to)[ \t]+)?[\"'`]?(?P<v>\S+)",
       check=prose_password, flags=I, needs=_PW_NEEDS),
    _d("Credential in prose",
       r"(?<!\S)[\"'`]?(?P<v>[^\s\"'`]{6,64})[\"'`]?[ \t]+(?:is|as|was)[ \t]+(?:the|my|our|your)[ \t]+"
       rf"(?:[\w-]+[ \t]+)?{_PW_WORD}\b", check=prose_password, flags=I, needs=_PW_NEEDS),
    _d("Passphrase in prose",
       r"\b(?:pass(?:word|phrase)|unlock phrase)\b[^\"'\n]{0,30}?\b(?:is|:|=)\s*[\"'][^\"'\n]{8,}[\"']", flags=I),
    # the same in other languages: "das Passwort lautet ...", "mi contraseña es ...", "X est mon mot de passe"
    _d("Credential in prose",
       rf"{shapes.FOREIGN_PW_WORD}\w{{0,3}}"
       rf"(?:[ \t]+{shapes.FOREIGN_FOR}(?:[ \t]+{shapes.FOREIGN_THE})?[ \t]+[\w.@-]+(?:[ \t]+[\w.@-]+)?)?"
       rf"(?P<sep>[ \t]*(?::|=|-|\b{shapes.FOREIGN_IS}\b)(?:[ \t]*:)?[ \t]*|[ \t]+)"
       r"[\"'`«]?(?P<v>\S+)", check=prose_password, flags=I, needs=shapes.FOREIGN_PW_NEEDS),
    _d("Credential in prose",  # the English word, with a copula or a preposition of another language
       rf"\bpassword\w{{0,3}}(?:[ \t]+{shapes.FOREIGN_FOR}(?:[ \t]+{shapes.FOREIGN_THE})?[ \t]+[\w.@-]+)?"
       rf"(?P<sep>[ \t]+{shapes.FOREIGN_IS_STRICT}[ \t]+)[\"'`«]?(?P<v>\S+)", check=prose_password, flags=I),
    _d("Credential in prose",
       r"(?<!\S)[\"'`«]?(?P<v>[^\s\"'`»]{6,64})[\"'`»]?[ \t]+"
       rf"{shapes.FOREIGN_IS}[ \t]+(?:[\w'-]+[ \t]+){{0,2}}(?:{shapes.FOREIGN_PW_WORD}|password)",
       check=prose_password, flags=I, needs=shapes.FOREIGN_PW_NEEDS),
    # a passphrase of plain words, in any of those languages: "my password is correct horse battery staple"
    _d("Passphrase in prose",
       rf"(?:\b(?:pass(?:word|wd|phrase)|pwd|pw|unlock phrase)|{shapes.FOREIGN_PW_WORD}\w{{0,3}})"
       rf"(?:[ \t]+(?:for|of|to|on|{shapes.FOREIGN_FOR})[ \t]+(?:(?:the|my|our|your|{shapes.FOREIGN_THE})[ \t]+)?"
       r"[\w.@-]+(?:[ \t]+[\w.@-]+)?)?"
       rf"[ \t]*(?::|=|\b(?:is|was|{shapes.FOREIGN_IS})\b)[ \t]*(?::[ \t]*)?[\"'`«]?"
       r"(?P<v>[^\W\d_]{2,}(?:[ \t]+[^\W\d_]{2,}){2,7})(?=[\"'`»]?[ \t]*(?:$|[\n.,;!?:)]|-[ \t]))",
       check=words_passphrase, flags=I, needs=_PW_NEEDS + shapes.FOREIGN_PW_NEEDS),
    _d("Login and password", r"(?<![\w/:])[\w.@+-]{2,40}(?:[ \t]+/[ \t]+|:)(?P<v>[^\s/]{6,64})", check=login_pair,
       needs=(":", "/")),
    _d("PIN", r"\b(?:pin(?: code| number)?|passcode)\s*(?:is|:|=)\s*\d{4,8}\b", flags=I, needs=("pin", "passcode")),
    # an opaque key next to a word that names it
    _d("API key in prose", rf"\bkey\s*(?:is|:|=)\s*[\"'`]?(?P<v>{_TOKEN_CHARS}{{20,}})", check=context_token, flags=I),
    _d("API key in prose",
       r"\b(?:api[ _-]?key|apikey|access[ _-]?key|secret(?:[ _-]?key)?|client[ _-]?secret|(?:auth|access|refresh|api"
       r"|bot|personal|bearer|session|ci|deploy)?[ _-]?token|app(?:lication)?[ _-]?key|signing[ _-]?key|credentials?)\b"
       rf"[^\n]{{0,40}}?(?<![\w./~+=-])(?P<v>{_TOKEN_CHARS}{{16,}})", check=context_token, flags=I),
]  # fmt: skip


def gated_detectors(text: str, low: str, open_gates: frozenset[int] | None = None) -> Iterator[tuple]:
    """(kind, pattern, check) of memlab's own detectors whose gate holds on `text` (`low`: fold(text);
    `open_gates`: the turn's open gates, `TurnGates.open`, when the caller has them), in their order: the secret
    filter asks whether each has a passing match (`scan`), redaction replaces what they cover."""
    if open_gates is None:
        open_gates = _turn_gates().open(text, low)
    own = len(_DETECTORS)
    return (_DETECTORS[i][:3] for i in sorted(open_gates) if i < own)


def _own_findings(text: str, low: str, open_gates: frozenset[int] | None = None) -> Iterator[str]:
    for kind, pattern, check in gated_detectors(text, low, open_gates):
        if any(check is None or check(match) for match in scan(pattern, text, low)):
            yield kind


def find_secrets(text: str) -> list[str]:
    """The kinds of credential found in `text` (empty when it holds none). Thread-safe. Fails closed: when
    scanning raises, the answer is `[SCAN_FAILED]`, so the text is treated as a secret and never stored."""
    try:
        folded = fold(text)
        open_gates = _turn_gates().open(text, folded)
        kinds = set(_own_findings(text, folded, open_gates))
        live = _ds_live(text, folded, open_gates)
        for line in text.splitlines() if live else ():
            if line.strip():
                kinds.update(_ds_findings(line, live))
        return sorted(kinds)
    except Exception:  # fail closed, whatever went wrong
        return [SCAN_FAILED]
