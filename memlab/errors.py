"""Every error memlab raises names the problem and the fix; they all share one base class."""

from __future__ import annotations

from memlab.safety.redact import redact


class MemlabError(Exception):
    """Base class: catch this to handle any memlab failure. Its message passes memlab's one redactor
    (`memlab.safety.redact`): a raise site may quote a DSN, a URL, a server's reply or a user's text, and no password,
    key or token in them goes further (into a log, a traceback, the CLI's error line)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class ConfigError(MemlabError):
    """A setting, argument or environment variable is wrong."""


class DatabaseUnavailableError(MemlabError):
    """The PostgreSQL server cannot be reached or started."""


class ExtensionError(MemlabError):
    """The pgvector extension is missing or too old."""


class DimensionError(MemlabError):
    """An embedding does not have the dimension its model is registered with."""


class FixtureError(MemlabError):
    """A fixture or labelled-set file is malformed; the message names file, line and key."""


class EmbeddingEndpointError(MemlabError):
    """A remote embedding endpoint is unreachable, refuses the request or answers something unusable."""
