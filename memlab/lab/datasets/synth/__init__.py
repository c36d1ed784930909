"""memlab-synth: a seeded, offline generator of labelled long-term-memory data (see datasets/memlab-synth).

from memlab.lab.datasets.synth import generate
labelled = generate(seed=0)  # 64 users of 5 to 2,000 events, with paraphrased, typed questions
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
