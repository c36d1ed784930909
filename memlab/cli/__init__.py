"""The `memlab` command line, one module per group of commands. It calls the same public functions the notebooks
use."""

from memlab.cli import evaluation, labels, operations  # noqa: F401  (each registers its commands on `app`)
from memlab.cli.main import app

__all__ = ["app"]
