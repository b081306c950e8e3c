"""Collections, their labeling unit and grade scale, and who may do what in them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from ..pool_strategies import DEPTH, STRATEGIES, Strategy
from ..resolution import POLICIES, SINGLE


class LabelingUnit(models.TextChoices):
    DOCUMENT = "document", "document"
    CHUNK = "chunk", "chunk"
    EVIDENCE = "evidence", "evidence point"


ResolutionPolicy = models.TextChoices("ResolutionPolicy", [(p, p) for p in POLICIES])


class CollectionManager(models.Manager["Collection"]):
    def get_by_natural_key(self, slug: str) -> Collection:
        return self.get(slug=slug)


class Collection(models.Model):
    """A fixed corpus boundary and the query set evaluated against it.

    ``scale`` is an ordered list of ``{"grade": int, "name": str}``, lowest grade first;
    grades are distinct non-negative integers. ``relevant_grade`` is the lowest grade
    that counts as relevant and must be one of the scale's grades.
    """

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(
        blank=True, help_text="The corpus boundary: what is in, what is out, as of when."
    )
    unit = models.CharField(
        max_length=16, choices=LabelingUnit.choices, default=LabelingUnit.DOCUMENT
    )
    scale = models.JSONField(
        help_text='Ordered grades, e.g. [{"grade": 0, "name": "not relevant"}]'
    )
    relevant_grade = models.PositiveSmallIntegerField(default=1)
    guidelines = models.TextField(blank=True)
    pool_depth = models.PositiveIntegerField(default=10)
    pool_strategy = models.CharField(
        max_length=16,
        choices=[(s, s) for s in STRATEGIES],
        default=DEPTH,
        help_text="The order in which pooled pairs are served within a query: depth (every "
        "run to the pool depth, most-surfaced first), mtf (move-to-front) or bandit (MaxMean); "
        "docs/POOLING.md. Runs imported afterwards use it unless their import names another.",
    )
    pool_floor = models.PositiveIntegerField(
        default=0,
        help_text="With mtf or bandit: every run's first K pooled items are served before "
        "any adaptive choice (0: none).",
    )
    holds_whole_corpus = models.BooleanField(
        default=False,
        help_text="Every item of the corpus is imported: a run naming an item the collection "
        "lacks is refused instead of creating a placeholder to judge.",
    )
    assessors_per_item = models.PositiveSmallIntegerField(
        default=1,
        help_text="How many different reviewers assess each pooled pair (blind) before "
        "its label is resolved; 1 is one judgment per pair.",
    )
    resolution_policy = models.CharField(
        max_length=16,
        choices=ResolutionPolicy.choices,
        default=SINGLE,
        help_text="How several assessments become the resolved label (judgments/resolution.py).",
    )
    adjudicate_distance = models.PositiveSmallIntegerField(
        default=1,
        help_text="The largest grade spread that min-of-agreeing and adjudicate resolve "
        "without an adjudicator.",
    )
    model_labels = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text="Empty (the default): no model-made label enters a snapshot. A judge's "
        "name: at freeze, that judge's current proposal becomes the label of each pair no "
        "person judged or assessed, marked as the judge's (README, 'Model judges').",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = CollectionManager()

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(pool_depth__gte=1), name="collection_pool_depth_positive"
            ),
            models.CheckConstraint(
                condition=Q(assessors_per_item__gte=1), name="collection_assessors_positive"
            ),
            models.CheckConstraint(
                condition=Q(resolution_policy__in=POLICIES), name="collection_policy_valid"
            ),
            models.CheckConstraint(
                condition=Q(pool_strategy__in=STRATEGIES), name="collection_pool_strategy_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.slug

    def natural_key(self) -> tuple[str]:
        return (self.slug,)

    @property
    def grades(self) -> list[int]:
        return [int(g["grade"]) for g in self.scale]

    def grade_name(self, grade: int) -> str:
        for g in self.scale:
            if int(g["grade"]) == grade:
                return str(g["name"])
        return str(grade)

    def is_relevant_grade(self, grade: int) -> bool:
        return grade >= self.relevant_grade

    @property
    def pooling(self) -> str:
        """The pooling strategy as a reader writes it, e.g. ``depth 5 + bandit``."""
        return str(Strategy(self.pool_strategy, self.pool_floor))

    @property
    def has_overlap(self) -> bool:
        """Several assessors per item: labels are resolved from blind assessments."""
        return self.assessors_per_item > 1


class Role(models.TextChoices):
    """What a member may do in one collection; each role includes the ones before it."""

    REVIEWER = "reviewer", "reviewer"  # read, label, claim tasks
    EVALUATOR = "evaluator", "evaluator"  # also upload runs, freeze, score, export
    ADMIN = "admin", "admin"  # also manage members and settings


ROLE_RANK = {Role.REVIEWER: 1, Role.EVALUATOR: 2, Role.ADMIN: 3}


def role_allows(held: str | None, needed: str) -> bool:
    """Whether a member holding ``held`` (``None``: not a member) may do what ``needed``
    allows: every role includes the ones before it. The one place that compares roles."""
    return held is not None and ROLE_RANK[Role(held)] >= ROLE_RANK[Role(needed)]


class Membership(models.Model):
    """A user's role in one collection. Nobody sees a collection without one, except
    superusers."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    can_adjudicate = models.BooleanField(
        default=False,
        help_text="May decide pairs whose assessors disagree (admins always may).",
    )
    # Single sign-on (judgments/sso/): the IdP group whose mapping (VERITY_OIDC_GROUP_ROLES)
    # made this membership; it then follows the group at each sign-in and is removed when
    # the user leaves it. Empty for a membership an admin made, which sign-ins never touch.
    granted_by_group = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "user"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "user"], name="membership_unique"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.role} of {self.collection_id}"

    def allows(self, role: str) -> bool:
        return role_allows(self.role, role)

    @property
    def adjudicates(self) -> bool:
        return self.can_adjudicate or self.role == Role.ADMIN
