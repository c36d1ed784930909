"""The reliability probes behind `memlab check reliability`: one module per class of hole, each with a
`*_family(...) -> Family` the run calls, and the helpers the tests share with the run (the private server and
its postmaster, the trace scans, the tripwire and gated embedders). Modules here are internal; use the names
below, or import the probe module a test checks. Probe modules import each other directly, never this package."""

from memlab.lab.reliability.probes.bad_inputs import bad_inputs_family
from memlab.lab.reliability.probes.concurrency import concurrency_family, memories, units
from memlab.lab.reliability.probes.erasure_disk import erasure_disk_family
from memlab.lab.reliability.probes.erasure_traces import cache_keys, erasure_family, table_traces
from memlab.lab.reliability.probes.erasure_writes import erasure_writes_family
from memlab.lab.reliability.probes.family import Family
from memlab.lab.reliability.probes.faults import Tripwire, faults_family
from memlab.lab.reliability.probes.folders import folders_family
from memlab.lab.reliability.probes.gate_direction import gate_direction_family
from memlab.lab.reliability.probes.input_bounds import input_bounds_family
from memlab.lab.reliability.probes.inputs import inputs_family
from memlab.lab.reliability.probes.isolation import isolation_family
from memlab.lab.reliability.probes.leaks import leaks_family
from memlab.lab.reliability.probes.lexical import lexical_family
from memlab.lab.reliability.probes.model_safety import model_safety_family
from memlab.lab.reliability.probes.prompt_fences import prompt_fences_family
from memlab.lab.reliability.probes.races import GatedEmbedder, GatedExtractor, race, races_family
from memlab.lab.reliability.probes.run_folders import run_folders_family
from memlab.lab.reliability.probes.scratch_leftovers import scratch_leftovers_family
from memlab.lab.reliability.probes.secret_rates import secrets_family
from memlab.lab.reliability.probes.server import postmaster_pid, private_home, private_server, signal_postmaster
from memlab.lab.reliability.probes.sizes import Size, memory_cached_embedder
from memlab.lab.reliability.probes.split_secrets import split_secrets_family

__all__ = [
    "Family",
    "GatedEmbedder",
    "GatedExtractor",
    "Size",
    "Tripwire",
    "bad_inputs_family",
    "cache_keys",
    "concurrency_family",
    "erasure_disk_family",
    "erasure_family",
    "erasure_writes_family",
    "faults_family",
    "folders_family",
    "gate_direction_family",
    "input_bounds_family",
    "inputs_family",
    "isolation_family",
    "leaks_family",
    "lexical_family",
    "memories",
    "memory_cached_embedder",
    "model_safety_family",
    "postmaster_pid",
    "private_home",
    "private_server",
    "prompt_fences_family",
    "race",
    "races_family",
    "run_folders_family",
    "scratch_leftovers_family",
    "secrets_family",
    "signal_postmaster",
    "split_secrets_family",
    "table_traces",
    "units",
]
