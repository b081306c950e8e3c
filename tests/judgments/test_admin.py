"""Every admin page opens, and models changed only through services are read-only there."""

import pytest
from django.contrib import admin
from django.urls import reverse

from judgments.admin import ReadOnlyAdmin

REGISTERED = sorted(
    (m._meta.app_label, m._meta.model_name, type(a)) for m, a in admin.site._registry.items()
)
OURS = [r for r in REGISTERED if r[0] in ("judgments", "scoring", "judges")]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("app", "model", "model_admin"), OURS, ids=[f"{a}.{m}" for a, m, _ in OURS]
)
def test_changelist_opens_and_read_only_models_refuse_adding(
    client, settings, app, model, model_admin
):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    from django.contrib.auth import get_user_model

    boss = get_user_model().objects.create_superuser("boss", "boss@example.org", "pw")
    client.force_login(boss)
    assert client.get(reverse(f"admin:{app}_{model}_changelist")).status_code == 200
    add = client.get(reverse(f"admin:{app}_{model}_add"))
    assert add.status_code == (403 if issubclass(model_admin, ReadOnlyAdmin) else 200)


def test_history_snapshots_runs_and_evaluations_are_read_only_in_admin():
    read_only = {f"{a}.{m}" for a, m, cls in OURS if issubclass(cls, ReadOnlyAdmin)}
    assert {
        "judgments.judgment",
        "judgments.judgmentchange",
        "judgments.snapshot",
        "scoring.run",
        "scoring.evaluation",
    } <= read_only


@pytest.mark.django_db
def test_the_admin_lists_tokens_without_their_hash_and_revokes_them(client, settings):
    from django.contrib.auth import get_user_model

    from judgments.models import ApiToken
    from judgments.services import create_api_token

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    boss = get_user_model().objects.create_superuser("boss", "boss@example.org", "pw")
    issued = create_api_token(user=boss, name="ci")
    client.force_login(boss)
    url = reverse("admin:judgments_apitoken_changelist")
    listing = client.get(url).content.decode()
    assert issued.token.prefix in listing and issued.token.key_hash not in listing
    detail = client.get(reverse("admin:judgments_apitoken_change", args=[issued.token.pk]))
    assert issued.token.key_hash not in detail.content.decode()
    client.post(url, {"action": "revoke", "_selected_action": [issued.token.pk]})
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is not None
