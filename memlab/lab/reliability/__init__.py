"""The reliability report (`memlab check reliability`): the hostile probes' families, bounded, run against a
scratch database. Modules here are internal; use the names below and the `probes` package's face."""

from memlab.lab.reliability import probes
from memlab.lab.reliability.probes.family import Family
from memlab.lab.reliability.run import FAMILY_NAMES as RELIABILITY_FAMILIES
from memlab.lab.reliability.run import SIZES as RELIABILITY_SIZES
from memlab.lab.reliability.run import reliability_markdown, run_reliability

__all__ = ["RELIABILITY_FAMILIES", "RELIABILITY_SIZES", "Family", "probes", "reliability_markdown", "run_reliability"]
