"""`python -m memlab.cli`: the same app as the `memlab` script."""

from memlab.cli import app

app()
