"""The "API tokens" page and ``/api/tokens/``: a user's own tokens, made, rotated, revoked.

A new key is shown once, in the response to the POST that made it, and never again (it
is not stored: the page lists each token's prefix); the response is not cached. The API
lists tokens and revokes them (``DELETE /api/tokens/<id>/``); it does not make them, so
that a leaked token can never mint a stronger one.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from judgments.models import ApiToken, TokenScope
from judgments.selectors import collections_for
from judgments.services import (
    InvariantError,
    create_api_token,
    revoke_api_token,
    rotate_api_token,
)


def _own_token(request: HttpRequest) -> ApiToken | None:
    try:
        pk = int(request.POST.get("token", ""))
    except ValueError:
        return None
    return (
        ApiToken.objects.filter(user=request.user, pk=pk)
        .select_related("user", "collection")
        .first()
    )


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    issued = None
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "create":
                issued = _create(request)
            elif action in ("rotate", "revoke"):
                token = _own_token(request)
                if token is None:
                    messages.error(request, "No such token of yours; the list below is current.")
                    return redirect("api-tokens")
                if action == "rotate":
                    issued = rotate_api_token(token=token, by=request.user, request=request)
                elif revoke_api_token(token=token, by=request.user, request=request):
                    messages.success(
                        request, f"Token '{token.name}' revoked: scripts using it now get 401."
                    )
                    return redirect("api-tokens")
                else:
                    messages.info(request, f"Token '{token.name}' was revoked already.")
                    return redirect("api-tokens")
            else:
                messages.error(request, "Unknown action; use the buttons below.")
                return redirect("api-tokens")
        except InvariantError as exc:
            messages.error(request, str(exc))
            return redirect("api-tokens")
    response = render(
        request,
        "accounts/tokens.html",
        {
            "tokens": ApiToken.objects.filter(user=request.user).select_related("collection"),
            "issued": issued,
            "scopes": TokenScope.choices,
            "collections": collections_for(request.user).order_by("slug"),
            "default_days": settings.VERITY_TOKEN_DAYS,
            "max_days": settings.VERITY_TOKEN_MAX_DAYS,
        },
    )
    add_never_cache_headers(response)
    return response


def _create(request: HttpRequest) -> Any:
    collection = None
    slug = request.POST.get("collection", "")
    if slug:
        collection = collections_for(request.user).filter(slug=slug).first()
        if collection is None:
            raise InvariantError(f"no collection '{slug}' among yours")
    try:
        days = int(request.POST.get("days") or settings.VERITY_TOKEN_DAYS)
    except ValueError:
        raise InvariantError("the lifetime is a whole number of days") from None
    return create_api_token(
        user=request.user,
        name=request.POST.get("name", ""),
        scope=request.POST.get("scope", TokenScope.READ),
        collection=collection,
        days=days,
        by=request.user,
        request=request,
    )


class ApiTokenSerializer(serializers.ModelSerializer):
    collection = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    state = serializers.CharField(read_only=True, help_text="active, expired or revoked")

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "scope",
            "collection",
            "state",
            "created_at",
            "expires_at",
            "last_used_at",
            "last_used_ip",
            "revoked_at",
        ]


def _tokens_for(request: Request) -> Any:
    """The caller's tokens; only the token itself for one limited to a collection."""
    tokens = ApiToken.objects.filter(user=request.user).select_related("collection")
    auth = request.auth
    if isinstance(auth, ApiToken) and auth.collection_id is not None:
        tokens = tokens.filter(pk=auth.pk)
    return tokens


@extend_schema(tags=["tokens"])
class TokenListApi(APIView):
    token_collection_aware = True  # _tokens_for narrows a limited token's view to itself

    @extend_schema(
        summary="Your API tokens (prefix, scope, expiry, last use); never their keys.",
        responses={200: ApiTokenSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        return Response(ApiTokenSerializer(_tokens_for(request), many=True).data)


@extend_schema(tags=["tokens"])
class TokenApi(APIView):
    token_collection_aware = True
    # Any token may revoke itself (a leaked key is killed with the key alone); revoking
    # another token of the user's needs an admin-scope token or the session.
    token_scopes = {"DELETE": TokenScope.READ}

    def _token(self, request: Request, pk: int) -> ApiToken:
        token = _tokens_for(request).filter(pk=pk).first()
        if token is None:
            raise exceptions.NotFound(f"No token {pk} among yours; GET /api/tokens/ lists them.")
        return token

    @extend_schema(summary="One of your tokens.", responses={200: ApiTokenSerializer})
    def get(self, request: Request, pk: int) -> Response:
        return Response(ApiTokenSerializer(self._token(request, pk)).data)

    @extend_schema(
        summary="Revoke one of your tokens: requests with it get 401 from now on.",
        responses={200: ApiTokenSerializer},
    )
    def delete(self, request: Request, pk: int) -> Response:
        token = self._token(request, pk)
        auth = request.auth
        if isinstance(auth, ApiToken) and auth.pk != token.pk and auth.scope != TokenScope.ADMIN:
            raise exceptions.PermissionDenied(
                f"Token '{auth.name}' ({auth.prefix}…) has the '{auth.scope}' scope: it may "
                "revoke itself only; revoking another token needs 'admin' (or the tokens page)."
            )
        revoke_api_token(token=token, by=request.user, request=request)
        token.refresh_from_db()
        return Response(ApiTokenSerializer(token).data)
