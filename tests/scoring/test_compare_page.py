"""Issue 24, items 5 and 10: the compare page names each statistic's method and why the
two can disagree, opens on two different evaluations that compare, and says it is
working while a comparison is computed."""

from __future__ import annotations

import re

import pytest

from judgments.models import Role
from scoring.views.comparison import _methods_disagree
from tests.scoring.report_helpers import member
from tests.scoring.test_comparison import example_runs, score  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def selected(html: str, side: str) -> list[str]:
    select = re.search(rf'<select id="pick-{side}".*?</select>', html, re.S).group(0)
    return re.findall(r'<option value="(\d+)" selected>', select)


def test_the_form_opens_on_two_different_comparable_evaluations(client, example_runs):  # noqa: F811
    collection, v1, one, two = example_runs
    first = score(one, v1)
    score(one, v1, ks=(3,))  # not comparable with the newest below (other cutoffs)
    newest = score(two, v1)
    client.force_login(member(collection, "ana", Role.REVIEWER))

    html = client.get(f"/c/{collection.slug}/compare/").content.decode()

    # on main both selects showed the newest evaluation, so Compare answered 400
    assert selected(html, "a") == [str(newest.pk)]
    assert selected(html, "b") == [str(first.pk)]
    assert 'data-busy="Comparing a and b' in html


def test_each_statistic_names_its_method_and_why_they_can_disagree(client, example_runs):  # noqa: F811
    collection, v1, one, two = example_runs
    a, b = score(one, v1), score(two, v1)
    client.force_login(member(collection, "ana", Role.REVIEWER))

    page = client.get(f"/c/{collection.slug}/compare/?a={a.pk}&b={b.pk}")
    data = client.get(f"/c/{collection.slug}/compare/?a={a.pk}&b={b.pk}&format=json").json()

    html = page.content.decode()
    assert '95% interval <span class="hint">(BCa bootstrap)</span>' in html
    assert 'p <span class="hint">(randomization test)</span>' in html
    assert "Two methods, two questions." in html
    assert "need not agree" in data["methods"]["disagreement"]
    assert "BCa bootstrap interval estimates" in data["methods"]["disagreement"]


@pytest.mark.parametrize(
    ("ci", "p", "disagree"),
    [
        ((0.05, 0.35), 0.25, True),  # the example: interval above 0, p = 0.25
        ((-0.02, 0.30), 0.01, True),  # interval holds 0, p below 0.05
        ((0.05, 0.35), 0.01, False),
        ((-0.02, 0.30), 0.40, False),
        ((None, None), 0.40, False),
    ],
)
def test_a_row_whose_methods_disagree_is_marked(ci, p, disagree):
    assert _methods_disagree({"ci_low": ci[0], "ci_high": ci[1], "p": p}) is disagree
