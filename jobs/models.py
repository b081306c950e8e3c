"""A ``Job``: one long operation run outside the request, with its state and progress.

The queue itself (which worker takes which task) belongs to the task backend that the
settings choose; a ``Job`` is Verity's own record of the operation: what was asked, by
whom, how far it got, what it made, and the error in words.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class JobKind(models.TextChoices):
    RUN_IMPORT = "run_import", "run import"
    SNAPSHOT_FREEZE = "snapshot_freeze", "snapshot freeze"
    SCORING = "scoring", "scoring"
    DIAGNOSIS = "diagnosis", "stage diagnosis"
    COMPARISON = "comparison", "comparison"
    COLLECTION_IMPORT = "collection_import", "collection import"
    QRELS_EXPORT = "qrels_export", "qrels export"
    JUDGING = "judging", "judging by a model"
    MAPPING_IMPORT = "mapping_import", "unit mapping import"
    COLLECTION_CREATE = "collection_create", "collection creation"
    BUNDLE_EXPORT = "bundle_export", "bundle export"


class JobState(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"


FINISHED = (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


class Job(models.Model):
    """One long operation. ``params`` holds what was asked (and the name of the input
    file, kept under ``VERITY_JOB_DIR`` until the job ends), ``result`` what it made
    (``url`` of the page, ``api_url``, a ``summary``), ``error`` why it failed, in words,
    with ``errors`` listing a refused file's lines.

    While it runs, progress lives outside the database (``jobs.progress``); ``phase``,
    ``done`` and ``total`` here hold the last values, written when it ends.
    """

    key = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    kind = models.CharField(max_length=32, choices=JobKind.choices)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    collection = models.ForeignKey(
        "judgments.Collection",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="jobs",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    label = models.CharField(max_length=300, help_text="What the job does, in a few words.")
    params = models.JSONField(default=dict)
    task_path = models.CharField(max_length=200, help_text="The task that runs it.")
    task_id = models.CharField(max_length=64, blank=True)
    retry_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="retries"
    )
    phase = models.CharField(max_length=100, blank=True)
    done = models.BigIntegerField(default=0)
    total = models.BigIntegerField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    errors = models.JSONField(default=list, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who cancelled the job (empty for the command line, or a deleted user).",
    )
    cancelled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["state", "started_at"], name="job_state_started"),
            models.Index(fields=["collection", "-created_at"], name="job_collection_recent"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} ({self.kind}, {self.state})"

    @property
    def finished(self) -> bool:
        return self.state in FINISHED
