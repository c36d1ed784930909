"""Old name of memlab.lab.dataset, kept while memlab-synth moves over."""

from memlab.lab.dataset import Dataset, Question, UserHistory

LabelledSet = Dataset

__all__ = ["Dataset", "LabelledSet", "Question", "UserHistory"]
