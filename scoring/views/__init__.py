"""Evaluation reports, stage diagnosis and paired comparison in the browser.

Every page is visible to the collection's members, whatever their role, and a 404 to
everyone else (a non-member learns nothing, not even that the collection exists). Each
page also answers ``?format=json`` and ``?format=csv`` with the very dicts it renders
(``scoring.reports``), so what a reader sees and what they download cannot disagree.

One module per page; this package re-exports the views, so ``scoring/urls.py`` names
them as ``views.<name>``.
"""

from .common import BadParameter, int_param, member_page
from .comparison import compare, compare_score, comparison_view
from .diagnosis import ITEMS_SHOWN, diagnosis_score, diagnosis_view, run_diagnosis
from .evaluations import evaluation_detail, evaluation_list, evaluation_new, report_view
from .runs import ranked_list, run_detail, run_list
from .settled import compare_focus, compare_on_latest

__all__ = [
    "ITEMS_SHOWN",
    "BadParameter",
    "compare",
    "compare_focus",
    "compare_on_latest",
    "compare_score",
    "comparison_view",
    "diagnosis_score",
    "diagnosis_view",
    "evaluation_detail",
    "evaluation_list",
    "evaluation_new",
    "int_param",
    "member_page",
    "ranked_list",
    "report_view",
    "run_detail",
    "run_diagnosis",
    "run_list",
]
