"""Collections, queries, items, judgments, their history and the review queue.

The DESIGN table is the glossary. Models hold data and invariants the database can
check; invariants that span rows (a ``relevant`` query needs a relevant judgment) are
enforced by the service functions in ``services.py``, which own the transactions.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class LabelingUnit(models.TextChoices):
    DOCUMENT = "document", "document"
    CHUNK = "chunk", "chunk"
    EVIDENCE = "evidence", "evidence point"


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
    created_at = models.DateTimeField(auto_now_add=True)

    objects = CollectionManager()

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(pool_depth__gte=1), name="collection_pool_depth_positive"
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


class Role(models.TextChoices):
    """What a member may do in one collection; each role includes the ones before it."""

    REVIEWER = "reviewer", "reviewer"  # read, label, claim tasks
    EVALUATOR = "evaluator", "evaluator"  # also upload runs, freeze, score, export
    ADMIN = "admin", "admin"  # also manage members and settings


ROLE_RANK = {Role.REVIEWER: 1, Role.EVALUATOR: 2, Role.ADMIN: 3}


class Membership(models.Model):
    """A user's role in one collection. Nobody sees a collection without one, except
    superusers."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
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
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(role)]


class QueryStatus(models.TextChoices):
    UNREVIEWED = "unreviewed", "unreviewed"
    RELEVANT = "relevant", "reviewed: has relevant items"
    NO_ANSWER = "no_answer", "reviewed: confirmed no answer"


class Query(models.Model):
    """A stable external id, its text and tags, and its review status.

    The status is stored apart from the judgments: an empty judgment list means
    "unreviewed" or "confirmed no answer" only as the status says.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="queries")
    external_id = models.CharField(max_length=200)
    text = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    status = models.CharField(
        max_length=16, choices=QueryStatus.choices, default=QueryStatus.UNREVIEWED
    )
    status_changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status_changed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "queries"
        ordering = ["collection", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "external_id"], name="query_external_id_unique"
            ),
            models.CheckConstraint(
                condition=Q(status__in=QueryStatus.values), name="query_status_valid"
            ),
        ]
        indexes = [models.Index(fields=["collection", "status"], name="query_collection_status")]

    def __str__(self) -> str:
        return f"{self.collection_id}:{self.external_id}"

    @property
    def is_scorable(self) -> bool:
        return self.status == QueryStatus.RELEVANT


class Item(models.Model):
    """A stable external id within the collection, with the text a reviewer reads.

    ``placeholder`` items were created from a run before their text was imported;
    an item import fills them in. Ids are opaque and never renumbered.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=200)
    title = models.TextField(blank=True)
    text = models.TextField(blank=True)
    url = models.URLField(max_length=2000, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    placeholder = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "external_id"], name="item_external_id_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.collection_id}:{self.external_id}"


class EvidenceCondition(models.Model):
    """A query's evidence rule in disjunctive normal form, stored apart from judgments.

    ``groups`` is a list of AND-groups of item external ids: the condition holds when
    every item of at least one group is retrieved. It is scored as its own measure.
    """

    query = models.OneToOneField(Query, on_delete=models.CASCADE, related_name="evidence")
    groups = models.JSONField()
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return " OR ".join("(" + " AND ".join(g) + ")" for g in self.groups)


class Judgment(models.Model):
    """The one current judgment of a (query, item) pair.

    ``version`` starts at 1 and grows by one on every change; an edit names the version
    it was based on and is refused when that is stale (compare-and-set in the service).
    """

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="judgments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judgments")
    grade = models.SmallIntegerField()
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)
    client_key = models.CharField(  # noqa: DJ001 -- NULL, not "", so that keys stay unique
        max_length=100,
        null=True,
        blank=True,
        help_text="A client-chosen key that makes a retried create return this judgment.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["query", "item"]
        constraints = [
            models.UniqueConstraint(fields=["query", "item"], name="judgment_one_per_pair"),
            models.UniqueConstraint(
                fields=["client_key"],
                condition=Q(client_key__isnull=False),
                name="judgment_client_key_unique",
            ),
            models.CheckConstraint(condition=Q(grade__gte=0), name="judgment_grade_non_negative"),
            models.CheckConstraint(condition=Q(version__gte=1), name="judgment_version_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.item_id}={self.grade} v{self.version}"


class ChangeSource(models.TextChoices):
    UI = "ui", "browser"
    API = "api", "API"
    IMPORT = "import", "import"
    ADMIN = "admin", "admin"


class ImmutableQuerySet(models.QuerySet):
    def update(self, **kwargs):  # type: ignore[no-untyped-def]
        raise TypeError(f"{self.model.__name__} rows are {self.model.immutable_reason}")

    def delete(self):  # type: ignore[no-untyped-def]
        raise TypeError(f"{self.model.__name__} rows are {self.model.immutable_reason}")


class ImmutableModel(models.Model):
    """Rows inserted once, inside the service that owns them, and never updated or deleted.

    Their user references are ``PROTECT``: a user who wrote history or froze a version is
    deactivated, never deleted (``SET_NULL`` would rewrite frozen rows).

    The ORM refuses here; on PostgreSQL, triggers (see the ``immutable_rows`` migration)
    refuse UPDATE and DELETE from raw SQL as well.
    """

    immutable_reason = "immutable"
    objects = ImmutableQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not self._state.adding:
            raise TypeError(f"{type(self).__name__} rows are {self.immutable_reason}")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise TypeError(f"{type(self).__name__} rows are {self.immutable_reason}")


class AppendOnlyModel(ImmutableModel):
    """History rows: written once inside the service that made the change, never edited."""

    immutable_reason = "append-only history"

    class Meta:
        abstract = True


class JudgmentChange(AppendOnlyModel):
    """One change of one judgment: who, when, old → new. ``old_grade`` is null on create."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="judgment_changes")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judgment_changes")
    old_grade = models.SmallIntegerField(null=True, blank=True)
    new_grade = models.SmallIntegerField(
        null=True, blank=True, help_text="Null when the change removed the judgment (an undo)."
    )
    old_note = models.TextField(blank=True)
    new_note = models.TextField(blank=True)
    version = models.PositiveIntegerField()
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=16, choices=ChangeSource.choices)

    class Meta:
        ordering = ["changed_at", "pk"]
        indexes = [models.Index(fields=["query", "item"], name="judgmentchange_pair")]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.item_id}: {self.old_grade} → {self.new_grade}"


class QueryStatusChange(AppendOnlyModel):
    """One change of a query's review status."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="status_changes")
    old_status = models.CharField(max_length=16, choices=QueryStatus.choices)
    new_status = models.CharField(max_length=16, choices=QueryStatus.choices)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=16, choices=ChangeSource.choices)

    class Meta:
        ordering = ["changed_at", "pk"]

    def __str__(self) -> str:
        return f"{self.query_id}: {self.old_status} → {self.new_status}"


class TaskStatus(models.TextChoices):
    PENDING = "pending", "pending"
    CLAIMED = "claimed", "claimed"
    DONE = "done", "done"


class ReviewTask(models.Model):
    """The unjudged marker: a (query, item) pair waiting for a judgment.

    One row per pair, however many sources surfaced it. It is ``done`` once the pair
    has a judgment; ``claimed`` while a reviewer holds its lease.
    """

    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, related_name="review_tasks"
    )
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="review_tasks")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="review_tasks")
    status = models.CharField(max_length=16, choices=TaskStatus.choices, default=TaskStatus.PENDING)
    source = models.CharField(
        max_length=200, help_text='Where it came from first, e.g. "qrels -1" or "run bm25".'
    )
    best_rank = models.PositiveIntegerField(null=True, blank=True)
    priority = models.IntegerField(default=0, help_text="Higher is served first.")
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-priority", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["query", "item"], name="reviewtask_one_per_pair"),
            models.CheckConstraint(
                condition=Q(status__in=TaskStatus.values), name="reviewtask_status_valid"
            ),
            models.CheckConstraint(
                condition=~Q(status=TaskStatus.CLAIMED)
                | (Q(claimed_by__isnull=False) & Q(lease_expires_at__isnull=False)),
                name="reviewtask_claim_has_lease",
            ),
        ]
        indexes = [
            models.Index(
                fields=["collection", "status", "-priority", "id"], name="reviewtask_queue"
            ),
            # What claim_next_task scans: open tasks in serving order, without the done ones.
            models.Index(
                fields=["collection", "-priority", "id"],
                name="reviewtask_open_queue",
                condition=Q(status__in=["pending", "claimed"]),
            ),
        ]

    def __str__(self) -> str:
        return f"task {self.query_id}/{self.item_id} {self.status}"


class TaskSource(models.Model):
    """One place that surfaced a review task's pair: a run stage (by label) and its rank.

    The label is plain text (``"run bm25 / reranked"``) because ``judgments`` never
    imports ``scoring``'s models; one row per (task, label), keeping the best rank.
    """

    task = models.ForeignKey(ReviewTask, on_delete=models.CASCADE, related_name="sources")
    label = models.CharField(max_length=300)
    rank = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rank", "label"]
        constraints = [
            models.UniqueConstraint(fields=["task", "label"], name="tasksource_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.label} rank {self.rank}"


class TaskSkip(models.Model):
    """A reviewer passed on a task: it goes back to the queue for the others."""

    task = models.ForeignKey(ReviewTask, on_delete=models.CASCADE, related_name="skips")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "reviewer"], name="taskskip_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_id} skipped {self.task_id}"


# -- snapshots ----------------------------------------------------------------------------


class FrozenModel(ImmutableModel):
    """Rows of a snapshot, run or evaluation: a frozen version never changes.

    A snapshot's rows reference queries and items without database-level foreign keys
    and with one index (the unique one): freezing copies a million rows, and per-row FK
    checks and extra indexes tripled its time. The ORM still PROTECTs the referenced rows.
    """

    immutable_reason = "frozen: a snapshot, run or evaluation never changes"

    class Meta:
        abstract = True


class Snapshot(FrozenModel):
    """Version ``number`` of a collection's judgments, query statuses and unjudged markers.

    ``content_hash`` is the sha256 of the canonical form documented in
    ``judgments/snapshots.py``; equal content always gives an equal hash.
    """

    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="snapshots")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    scale = models.JSONField()
    relevant_grade = models.PositiveSmallIntegerField()
    unit = models.CharField(max_length=16, choices=LabelingUnit.choices)
    note = models.TextField(blank=True)
    n_queries = models.PositiveIntegerField()
    n_judgments = models.PositiveIntegerField()
    n_unjudged = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "-number"]
        get_latest_by = "number"
        constraints = [
            models.UniqueConstraint(fields=["collection", "number"], name="snapshot_number_unique"),
            models.CheckConstraint(condition=Q(number__gte=1), name="snapshot_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.collection_id} v{self.number} ({self.content_hash[:12]})"

    @property
    def label(self) -> str:
        return f"v{self.number} sha256:{self.content_hash[:12]}"


class SnapshotQuery(FrozenModel):
    """A query's review status and evidence condition as frozen in a snapshot."""

    snapshot = models.ForeignKey(
        Snapshot,
        on_delete=models.PROTECT,
        related_name="queries",
        db_constraint=False,
        db_index=False,
    )
    query = models.ForeignKey(
        Query, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    status = models.CharField(max_length=16, choices=QueryStatus.choices)
    evidence = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "query"], name="snapshotquery_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.snapshot_id}/{self.query_id}: {self.status}"


class SnapshotJudgment(FrozenModel):
    """A judgment's grade as frozen in a snapshot."""

    snapshot = models.ForeignKey(
        Snapshot,
        on_delete=models.PROTECT,
        related_name="judgments",
        db_constraint=False,
        db_index=False,
    )
    query = models.ForeignKey(
        Query, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    item = models.ForeignKey(
        Item, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    grade = models.SmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["snapshot", "query", "item"], name="snapshotjudgment_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.snapshot_id}/{self.query_id}/{self.item_id}={self.grade}"


class SnapshotUnjudged(FrozenModel):
    """An open review task (unjudged marker) as frozen in a snapshot."""

    snapshot = models.ForeignKey(
        Snapshot,
        on_delete=models.PROTECT,
        related_name="unjudged",
        db_constraint=False,
        db_index=False,
    )
    query = models.ForeignKey(
        Query, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    item = models.ForeignKey(
        Item, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["snapshot", "query", "item"], name="snapshotunjudged_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.snapshot_id}/{self.query_id}/{self.item_id} unjudged"
