"""Secrets never reach an error message, a log line or the CLI's error line.

Every path that echoes what it was given is tried with a marker secret: a DSN the parser refuses (it quotes the
password token), a DSN whose server is unreachable, an endpoint that answers 401 (or 200) and echoes the
Authorization header back, a base_url carrying user:password@, a log record holding a DSN. The endpoints are
tiny HTTP servers on 127.0.0.1 started by the test."""

from __future__ import annotations

import importlib
import json
import logging
import pkgutil
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

import memlab
import memlab.safety.redact as redaction
from memlab.cli import app
from memlab.embedding import OpenAICompatibleEmbedder
from memlab.lab.reliability.probes.leaks import MALFORMED_DSNS, MARK, EchoEndpoint


@pytest.mark.parametrize("dsn", MALFORMED_DSNS)
def test_a_malformed_dsn_is_refused_without_its_password(dsn, monkeypatch):
    with pytest.raises(memlab.ConfigError) as err:
        memlab.configured_dsn(dsn)
    assert MARK not in str(err.value) and "connection string" in str(err.value)
    monkeypatch.setenv("MEMLAB_DSN", dsn)
    with pytest.raises(memlab.ConfigError) as err:
        memlab.configured_dsn()
    assert MARK not in str(err.value)


def test_the_cli_error_line_holds_no_dsn_password(tmp_path):
    runner = CliRunner()
    for dsn in MALFORMED_DSNS[:3]:
        result = runner.invoke(app, ["eval", "--suite", "fixtures", "--dsn", dsn, "--out", str(tmp_path / "x")])
        assert result.exit_code == 2, result.output
        assert MARK not in result.output and "error:" in result.output


def test_an_unreachable_dsn_with_a_password_is_named_without_it(monkeypatch, tmp_path):
    dsn = f"postgresql://memlab:{MARK}@127.0.0.1:1/memlab"
    with pytest.raises(memlab.DatabaseUnavailableError) as err:
        memlab.open_store(dsn, timeout=1)
    assert MARK not in str(err.value) and "127.0.0.1" in str(err.value)
    assert MARK not in str(err.value.__cause__ or "")
    monkeypatch.setenv("MEMLAB_DB_TIMEOUT", "1")
    monkeypatch.chdir(tmp_path)  # the bench's default folder is ./reports/bench/<size>-<time>
    result = CliRunner().invoke(app, ["bench", "--dsn", dsn])
    assert result.exit_code == 2 and MARK not in result.output and "127.0.0.1" in result.output, result.output
    assert not (tmp_path / "reports").exists(), "a bench that could not reach its database left a folder behind"


@pytest.fixture(params=[401, 200], ids=["401", "200-without-the-expected-reply"])
def echo(request):
    server = EchoEndpoint(request.param)
    yield server
    server.close()


def test_the_llm_extractor_never_echoes_the_authorization_header(echo):
    key = f"sk-test-{MARK}-0123456789abcdef"
    extractor = memlab.LlmExtractor(base_url=echo.url, model="m", api_key=key)
    event = memlab.Event(id="e1", author="user", text="I live in Lisbon.", timestamp=datetime(2026, 3, 1, tzinfo=UTC))
    with pytest.raises(memlab.facts.ExtractionError) as err:
        extractor.extract([event], session_id="s", registry=memlab.facts.default_registry())
    assert MARK not in str(err.value) and echo.url in str(err.value)


def test_the_embedder_never_echoes_the_authorization_header(echo, monkeypatch):
    monkeypatch.setenv("LEAK_TEST_KEY", f"sk-test-{MARK}-0123456789abcdef")
    embedder = memlab.embedding.OpenAICompatibleEmbedder(echo.url, "m", api_key_env="LEAK_TEST_KEY", retries=0)
    with pytest.raises(memlab.EmbeddingEndpointError) as err:
        embedder.embed_query("hello")
    assert MARK not in str(err.value) and echo.url in str(err.value)


def test_a_base_url_with_a_password_is_refused_without_echoing_it():
    url = f"http://user:{MARK}@127.0.0.1:1/v1"
    with pytest.raises(memlab.ConfigError) as err:
        memlab.LlmExtractor(base_url=url, model="m")
    assert MARK not in str(err.value)
    with pytest.raises(memlab.ConfigError) as err:
        memlab.embedding.OpenAICompatibleEmbedder(url, "m")
    assert MARK not in str(err.value)


def test_an_unreachable_llm_endpoint_with_a_key_in_its_query_is_named_without_it():
    extractor = memlab.LlmExtractor(base_url=f"http://127.0.0.1:1/v1?api_key={MARK}", model="m", timeout=2)
    with pytest.raises(memlab.facts.ExtractionError) as err:
        extractor.extract([], session_id="s", registry=memlab.facts.default_registry())
    assert MARK not in str(err.value) and "127.0.0.1" in str(err.value)


def test_every_memlab_logger_redacts(caplog):
    for module in pkgutil.walk_packages(memlab.__path__, "memlab."):
        if not module.name.startswith(("memlab.lab.", "memlab.cli")):
            importlib.import_module(module.name)
    names = [n for n, lg in logging.Logger.manager.loggerDict.items()
             if isinstance(lg, logging.Logger) and (n == "memlab" or n.startswith("memlab."))]  # fmt: skip
    assert names, "memlab has loggers"
    for name in names:
        logger = logging.getLogger(name)
        with caplog.at_level(logging.WARNING, logger=name):
            logger.warning("cannot reach %s with header %s", f"postgresql://u:{MARK}@h/db",
                           {"Authorization": f"Bearer {MARK}xyz"})  # fmt: skip
        assert MARK not in caplog.text, f"logger {name} let a secret through"
        caplog.clear()


@pytest.mark.parametrize("text", [
    f"postgresql://alice:{MARK}@db.example.com:5432/app",
    f"host=db password={MARK} dbname=app",
    f"host=db password='{MARK} x' dbname=app",
    f"?sslmode=require&password={MARK}",
    f"Authorization: Bearer {MARK}",
    f"{{'Authorization': 'Basic {MARK}'}}",
    f'{{"headers": {{"authorization": "Token {MARK}"}}}}',
    f"x-api-key: {MARK}",
    f'{{"api_key": "{MARK}"}}',
    f"the wifi password: correct horse {MARK} staple",
    f"my token is ghp_{MARK}aaaaaaaaaaaaaaaaaaaaaaa",
])  # fmt: skip
def test_the_redactor_hides_each_form(text):
    assert MARK not in redaction.redact(text)


def test_the_redactor_hides_known_secrets_in_every_encoding():
    secret = f"p@ss {MARK}/é"
    echoed = f"raw {secret} url {secret.replace(' ', '%20')} json {json.dumps(secret)} repr {secret!r}"
    import urllib.parse

    echoed += f" quoted {urllib.parse.quote(secret, safe='')} plus {urllib.parse.quote_plus(secret)}"
    assert MARK not in redaction.redact(echoed, known=[secret])


@pytest.mark.parametrize("text", [
    "use a URL such as postgresql://user:password@host:5432/dbname",
    "HTTP Basic authentication failed for user bob",
    "recall@10 0.531 on 2,000 questions; trace 4bf92f3577b34da6a3ce929d0e0e4736",
    "password authentication failed for user \"memlab\"",
])  # fmt: skip
def test_the_redactor_leaves_ordinary_messages_alone(text):
    assert redaction.redact(text) == text


def test_an_unreachable_embedder_with_a_key_in_its_query_is_named_without_it():
    embedder = OpenAICompatibleEmbedder(f"http://127.0.0.1:1/v1?api_key={MARK}", "m", retries=0, timeout=2)
    with pytest.raises(memlab.EmbeddingEndpointError) as err:
        embedder.embed_query("hello")
    assert MARK not in str(err.value) and "127.0.0.1" in str(err.value)


@pytest.mark.parametrize("error", [memlab.MemlabError, memlab.ConfigError, memlab.DatabaseUnavailableError,
                                   memlab.EmbeddingEndpointError, memlab.facts.ExtractionError])  # fmt: skip
def test_every_memlab_error_message_passes_the_redactor(error):
    """Whatever a raise site quotes (a DSN, a URL, a reply), the message a caller or a traceback shows is clean."""
    exc = error(f"cannot use postgresql://u:{MARK}@db/x; server said {{'Authorization': 'Bearer {MARK}1'}}")
    assert MARK not in str(exc) and "postgresql://u:***@db/x" in str(exc)
    assert MARK not in str(memlab.InputError(f"my password: {MARK}", app_name="a", user_id="u"))


@pytest.mark.parametrize(("key", "prefix"), [("invocation-4043", ""), ("invocation-831209", "direct-")])
def test_ids_memlab_makes_up_never_read_as_a_credential(key, prefix):
    """An id memlab derives (a query's, an ADK event's without one, a direct fact's) is never one the redactor
    changes: these keys' plain digests read as a card number and as a Belgian IBAN, and a redacted id written
    into one file stops joining the same id in another."""
    import hashlib

    plain = prefix + hashlib.sha1(key.encode()).hexdigest()[:16]
    assert redaction.needs_redaction(plain), "the case this guards against"
    made = redaction.plain_digest(key, prefix=prefix)
    assert made != plain and made.startswith(prefix) and len(made) == len(plain)
    assert not redaction.needs_redaction(made) and redaction.redact(made) == made
    assert redaction.plain_digest(key, prefix=prefix) == made, "one id per key"
    ordinary = "invocation-1"
    assert redaction.plain_digest(ordinary) == hashlib.sha1(ordinary.encode()).hexdigest()[:16], "others unchanged"
