"""The one error a model call raises, whatever the kind of model: the caller (a run, a sweep) records it per
question or shows it as one line, so it must say what happened and never carry the API key."""

from __future__ import annotations

from collections.abc import Sequence

from memlab.errors import MemlabError
from memlab.safety.redact import redact

ERROR_KINDS = ("unreachable", "timeout", "http", "malformed")


class ModelError(MemlabError):
    """A model endpoint could not be reached, timed out, refused the request or answered something unusable.
    `.kind` is one of ERROR_KINDS so a run can count failures by cause; the message is one line, redacted with
    the key sent as a known secret."""

    def __init__(self, message: str, kind: str, known: Sequence[str] = ()) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"ModelError kind must be one of {ERROR_KINDS}, not {kind!r}")
        super().__init__(" ".join(redact(message, [k for k in known if k]).split()))
        self.kind = kind

    def __reduce__(self):  # picklable across process pools with its kind
        return (type(self), (str(self), self.kind))
