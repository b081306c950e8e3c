"""The test provider's claims, its misbehaviour on demand, and its control endpoint."""

from __future__ import annotations

import json
import os
import threading
import time

from django.contrib.auth.models import Group, User
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.models import AccessToken, Application, Grant, IDToken, RefreshToken
from oauth2_provider.oauth2_validators import OAuth2Validator

#: What the next ID tokens get wrong: {"exp_offset": s, "aud": ..., "iss": ...}.
MISBEHAVIOUR: dict[str, object] = {}
#: The PKCE method of each authorization code handed out, in order.
CHALLENGE_METHODS: list[str] = []
_lock = threading.Lock()


class Validator(OAuth2Validator):
    # Every claim whatever the scopes asked: the tests choose claims through settings.
    oidc_claim_scope = None

    def get_additional_claims(self, request):
        user = request.user
        return {
            "preferred_username": user.username,
            "email": user.email,
            "groups": sorted(user.groups.values_list("name", flat=True)),
        }

    def get_id_token_dictionary(self, token, token_handler, request):
        claims, expiration_time = super().get_id_token_dictionary(token, token_handler, request)
        with _lock:
            wrong = dict(MISBEHAVIOUR)
        if "exp_offset" in wrong:
            claims["exp"] = int(time.time()) + int(wrong["exp_offset"])
        for claim in ("aud", "iss"):
            if claim in wrong:
                claims[claim] = wrong[claim]
        return claims, expiration_time

    def save_authorization_code(self, client_id, code, request, *args, **kwargs):
        with _lock:
            CHALLENGE_METHODS.append(request.code_challenge_method or "")
        return super().save_authorization_code(client_id, code, request, *args, **kwargs)


def ensure_client() -> Application:
    """The one client, Verity, registered with the id and secret the harness chose."""
    app, _ = Application.objects.update_or_create(
        client_id=os.environ["OIDC_PROVIDER_CLIENT_ID"],
        defaults={
            "name": "Verity",
            "client_secret": os.environ["OIDC_PROVIDER_CLIENT_SECRET"],
            "client_type": Application.CLIENT_CONFIDENTIAL,
            "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
            "algorithm": Application.RS256_ALGORITHM,
            "skip_authorization": True,
            "redirect_uris": "",
        },
    )
    return app


@csrf_exempt
def control(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body or b"{}")
    action = body.get("action")
    if action == "reset":
        with _lock:
            MISBEHAVIOUR.clear()
            CHALLENGE_METHODS.clear()
        for model in (IDToken, RefreshToken, AccessToken, Grant):
            model.objects.all().delete()
        User.objects.all().delete()
        Group.objects.all().delete()
    elif action == "misbehave":
        with _lock:
            MISBEHAVIOUR.clear()
            MISBEHAVIOUR.update({k: body[k] for k in ("exp_offset", "aud", "iss") if k in body})
    elif action == "user":
        user, _ = User.objects.update_or_create(
            username=body["username"], defaults={"email": body.get("email", "")}
        )
        user.set_password(body["password"])
        user.save()
        user.groups.set(Group.objects.get_or_create(name=g)[0] for g in body.get("groups", []))
    elif action == "redirect_uri":
        app = Application.objects.get(client_id=os.environ["OIDC_PROVIDER_CLIENT_ID"])
        uris = app.redirect_uris.split()
        if body["uri"] not in uris:
            app.redirect_uris = " ".join([*uris, body["uri"]])
            app.save(update_fields=["redirect_uris"])
    elif action != "status":
        return JsonResponse({"error": f"unknown action {action!r}"}, status=400)
    with _lock:
        return JsonResponse({"challenge_methods": list(CHALLENGE_METHODS)})
