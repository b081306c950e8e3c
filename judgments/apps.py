from django.apps import AppConfig


class JudgmentsConfig(AppConfig):
    name = "judgments"
    verbose_name = "Judgments"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.urls import register_converter

        from .converters import ExternalIdConverter

        # Before any URLconf is read: judgments' and scoring's URLs use it.
        register_converter(ExternalIdConverter, "external_id")

        from .sso.config import group_roles

        # A malformed VERITY_OIDC_GROUP_ROLES stops every process at start (gunicorn runs
        # no system checks), not the first sign-in.
        group_roles()
