from django.apps import AppConfig


class JudgmentsConfig(AppConfig):
    name = "judgments"
    verbose_name = "Judgments"
    default_auto_field = "django.db.models.BigAutoField"
