"""Model judges: their configuration per collection, and the grades they propose.

A ``Proposal`` is never a ``Judgment``: it is stored apart, with its provenance, and
enters a snapshot only where a collection's ``model_labels`` setting names its judge
(``judges.services.accepted_proposals``, frozen with the judge as the label's source).
A ``ProposalDecision`` records what a reviewer did with a proposal shown in the queue.
The built-in ``local-baseline`` judge needs no row: ``judges.selectors.judge_named``
gives it to every collection.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from .prompts import TEMPLATES

BASELINE_NAME = "local-baseline"
#: Bounds of a judge's settings: what one job may ask of a model server and of a worker.
MAX_CONCURRENCY = 32
MAX_TIMEOUT = 600.0
MAX_RETRIES = 10
MAX_BACKOFF = 300.0
MAX_REQUEST_BUDGET = 1_000_000
MAX_TOKENS = 8192


def _prompt_version_known(value: str) -> None:
    if value not in TEMPLATES:
        raise ValidationError(
            f"no prompt template '{value}'; known versions: {', '.join(sorted(TEMPLATES))}"
        )


class Provider(models.TextChoices):
    OPENAI = "openai-compatible", "OpenAI-compatible chat completions"
    LOCAL = "local-baseline", "offline baseline (static embeddings)"


class JudgeConfig(models.Model):
    """How one named judge of a collection asks its model.

    ``api_key_env`` names the environment variable that holds the key: the key itself is
    never stored, logged or shown. ``request_budget`` bounds the HTTP requests of one job,
    retries included; ``retries`` is the extra attempts per pair.
    """

    collection = models.ForeignKey(
        "judgments.Collection", on_delete=models.CASCADE, related_name="judges"
    )
    name = models.SlugField(max_length=100)
    provider = models.CharField(max_length=32, choices=Provider.choices, default=Provider.OPENAI)
    base_url = models.URLField(
        blank=True,
        help_text="e.g. http://127.0.0.1:8080/v1 (…/chat/completions is added); its host must "
        "be in the server's VERITY_JUDGE_HOSTS",
    )
    model = models.CharField(max_length=200, blank=True)
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of the environment variable holding the API key (never the key): "
        "VERITY_JUDGE_KEY_… or one the server's operator lists.",
    )
    timeout = models.FloatField(
        default=60.0,
        validators=[MinValueValidator(0.1), MaxValueValidator(MAX_TIMEOUT)],
        help_text=f"Seconds per request, the whole answer included (0.1 to {MAX_TIMEOUT:g}).",
    )
    retries = models.PositiveSmallIntegerField(
        default=2,
        validators=[MaxValueValidator(MAX_RETRIES)],
        help_text=f"Extra attempts per pair (0 to {MAX_RETRIES}).",
    )
    concurrency = models.PositiveSmallIntegerField(
        default=4,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_CONCURRENCY)],
        help_text=f"Requests in flight at once (1 to {MAX_CONCURRENCY}).",
    )
    request_budget = models.PositiveIntegerField(
        default=1000,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_REQUEST_BUDGET)],
        help_text="At most this many requests per job, retries included.",
    )
    backoff = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0.0), MaxValueValidator(MAX_BACKOFF)],
        help_text="Seconds before the first retry; doubled for each next one.",
    )
    temperature = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)]
    )
    max_tokens = models.PositiveIntegerField(
        default=512,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_TOKENS)],
        help_text="Longest answer asked for, in tokens (sent as max_tokens).",
    )
    prompt_version = models.CharField(
        max_length=32, default="umbrela-v1", validators=[_prompt_version_known]
    )
    show_in_queue = models.BooleanField(
        default=True,
        help_text="Show this judge's proposals in the review queue (never with several "
        "assessors per item: that assessment is blind).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "name"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="judgeconfig_unique"),
            models.CheckConstraint(
                condition=Q(concurrency__gte=1), name="judgeconfig_concurrency_positive"
            ),
            models.CheckConstraint(condition=Q(timeout__gt=0), name="judgeconfig_timeout_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.collection_id}/{self.name}"

    def clean(self) -> None:
        """The operator's outbound rules (``judges.egress``): the form and the admin
        refuse a URL or key variable they do not allow; a run checks them again."""
        from . import egress

        errors: dict[str, str] = {}
        if self.is_baseline:
            return
        if self.base_url:
            try:
                self.base_url = egress.checked_target(self.base_url).base_url
            except egress.OutboundRefused as exc:
                errors["base_url"] = str(exc)
        problem = egress.key_env_problem(self.api_key_env)
        if problem:
            errors["api_key_env"] = problem
        if errors:
            raise ValidationError(errors)

    @property
    def is_baseline(self) -> bool:
        return self.provider == Provider.LOCAL

    def params(self) -> dict[str, object]:
        """The parameters a proposal records: everything that shapes the answer, and
        nothing secret (the key's variable name is not even needed to reproduce it)."""
        if self.is_baseline:
            return {}
        return {
            "base_url": self.base_url,
            "timeout": self.timeout,
            "retries": self.retries,
            "concurrency": self.concurrency,
            "request_budget": self.request_budget,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }


class ProposalState(models.TextChoices):
    OK = "ok", "ok"
    FAILED = "failed", "failed"


class Proposal(models.Model):
    """A grade a model judge suggests for one (query, item) pair, with its provenance.

    ``grade`` is null exactly when the proposal failed; ``failure_reason`` then says why
    (every attempt's reason, in order). Several proposals per pair are kept: one per job.
    ``raw_answer`` is cut to ``providers.chat.RAW_ANSWER_CHARS`` and shown only to
    evaluators and admins.
    """

    collection = models.ForeignKey(
        "judgments.Collection", on_delete=models.CASCADE, related_name="proposals"
    )
    query = models.ForeignKey("judgments.Query", on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey("judgments.Item", on_delete=models.CASCADE, related_name="+")
    judge = models.CharField(max_length=100)
    provider = models.CharField(max_length=32, choices=Provider.choices)
    model = models.CharField(max_length=200, blank=True)
    prompt_version = models.CharField(max_length=32)
    prompt_hash = models.CharField(max_length=64, help_text="sha256 of the filled prompt")
    params = models.JSONField(default=dict, blank=True)
    grade = models.SmallIntegerField(null=True, blank=True)
    rationale = models.TextField(blank=True)
    raw_answer = models.TextField(blank=True)
    state = models.CharField(max_length=16, choices=ProposalState.choices)
    failure_reason = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=1)
    prompt_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tokens of the prompts, all attempts, if the server said."
    )
    completion_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tokens of the answers, all attempts, if the server said."
    )
    job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=ProposalState.values), name="proposal_state_valid"
            ),
            models.CheckConstraint(
                condition=(Q(state="ok") & Q(grade__isnull=False))
                | (Q(state="failed") & Q(grade__isnull=True)),
                name="proposal_grade_iff_ok",
            ),
        ]
        indexes = [
            models.Index(fields=["collection", "judge", "query", "item"], name="proposal_pair"),
        ]

    def __str__(self) -> str:
        return f"{self.judge}: {self.query_id}/{self.item_id}={self.grade} ({self.state})"


class DecisionOutcome(models.TextChoices):
    ACCEPTED = "accepted", "accepted"
    OVERRIDDEN = "overridden", "overridden"


class ProposalDecision(models.Model):
    """What a reviewer did with a proposal the review queue showed: gave its grade
    (``accepted``: the ``a`` key, or the same grade's key) or another one
    (``overridden``). Written in the transaction that records the judgment, so a
    judgment made beside a shown proposal always has its decision, and never a
    decision without its judgment. ``judgment_version`` is the version that grade made:
    a later edit of the judgment makes the label no longer the decision's."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="decisions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    outcome = models.CharField(max_length=16, choices=DecisionOutcome.choices)
    grade = models.SmallIntegerField(help_text="The grade the reviewer gave.")
    judgment_version = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(outcome__in=DecisionOutcome.values), name="proposaldecision_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"proposal {self.proposal_id} {self.outcome} ({self.grade}) by {self.user_id}"
