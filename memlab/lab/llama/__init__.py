"""The opt-in smoke run on a real local model (`make smoke-llama`, `python -m memlab.lab.llama.smoke`): memlab's
model paths against real llama.cpp servers. Modules here are internal; use the names below (the smoke run itself
is the `memlab.lab.llama.smoke` script, not imported here so that `python -m` runs it once)."""

from memlab.lab.llama.server import PACKAGES, LlamaServer, ServerStartError, installed_versions

__all__ = ["PACKAGES", "LlamaServer", "ServerStartError", "installed_versions"]
