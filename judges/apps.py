from __future__ import annotations

from typing import Any

from django.apps import AppConfig


def _record_decision(judgment: Any, user: Any, posted: Any) -> None:
    from .services import record_decision

    record_decision(judgment, user, posted)


class _JudgeLabels:
    """``judges.services.JudgeLabels``, imported when a freeze or a policy first asks:
    the judge services (and their HTTP client) are no part of start-up (issue 29)."""

    def names(self, collection: Any) -> list[str]:
        from .services import JudgeLabels

        return JudgeLabels().names(collection)

    def labels(self, collection: Any, judge: str) -> Any:
        from .services import JudgeLabels

        return JudgeLabels().labels(collection, judge)


class JudgesConfig(AppConfig):
    name = "judges"
    verbose_name = "Model judges"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # judgments may not import judges: it asks through these hooks, so every freeze
        # path applies a collection's model_labels policy, and the review queue's grades
        # record what the reviewer did with a shown proposal.
        from judgments.extensions import register_grade_listener, register_label_source

        register_label_source(_JudgeLabels())
        register_grade_listener(_record_decision)
