"""The "API tokens" page: a signed-in user creates, rotates and revokes their API key.

A new key is shown once, in the response to the POST that made it, and never again
(the page lists only its first characters); the response is not cached.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from judgments.services import InvariantError, create_api_token, revoke_api_token


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    new_key = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action in ("create", "rotate"):
            try:
                new_key = create_api_token(user=request.user, rotate=action == "rotate").key
            except InvariantError as exc:
                messages.error(request, str(exc))
                return redirect("api-tokens")
        elif action == "revoke":
            if revoke_api_token(user=request.user):
                messages.success(request, "Token revoked: scripts using it now get 401.")
            else:
                messages.info(request, "You had no token to revoke.")
            return redirect("api-tokens")
        else:
            messages.error(request, "Unknown action; use the buttons below.")
            return redirect("api-tokens")
    token = Token.objects.filter(user=request.user).first()
    response = render(
        request,
        "accounts/tokens.html",
        {"token": token, "new_key": new_key, "prefix": token.key[:6] if token else ""},
    )
    add_never_cache_headers(response)
    return response
