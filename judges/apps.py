from django.apps import AppConfig


class JudgesConfig(AppConfig):
    name = "judges"
    verbose_name = "Model judges"
    default_auto_field = "django.db.models.BigAutoField"
