"""memlab-synth: a seeded, offline generator of labelled long-term-memory data (see datasets/memlab-synth).

from memlab import lab
labelled = lab.datasets.generate_synth(seed=0)  # 64 users of 5 to 2,000 events, with paraphrased, typed questions

Internal to memlab.lab.datasets, whose face exports `generate_synth`; the tests import the parts they check here.
"""

from memlab.lab.datasets.synth.generator import NO_ANSWER, QTYPES, answer_parts, generate, mentions
from memlab.lab.datasets.synth.io import explain_questions, read_json, sample_transcript, write_json

__all__ = [
    "NO_ANSWER",
    "QTYPES",
    "answer_parts",
    "explain_questions",
    "generate",
    "mentions",
    "read_json",
    "sample_transcript",
    "write_json",
]
