"""Judging: pooling the systems' hits for real queries, and assessing them (a page, a notebook widget, or a
model). Modules here are internal; use the names below."""

from memlab.lab.judging.model_assessor import model_judgments
from memlab.lab.judging.model_assessor import write_judgments as write_model_judgments
from memlab.lab.judging.page import page_data as judging_page_data
from memlab.lab.judging.page import write_judge_page
from memlab.lab.judging.pool import pool_queries
from memlab.lab.judging.widget import JudgeWidget, judge_widget

__all__ = [
    "JudgeWidget",
    "judge_widget",
    "judging_page_data",
    "model_judgments",
    "pool_queries",
    "write_judge_page",
    "write_model_judgments",
]
