"""Authentication backends: single sign-on, and the switch that turns passwords off.

``OIDCBackend`` is mozilla-django-oidc's backend (authorization code flow; the callback
view has checked the state, and sends the nonce and the PKCE code verifier) with what
Verity needs on top:

- the provider's endpoints from its discovery document (``config.provider_metadata``);
- the ID token's audience and issuer checked, and a clock leeway: the library verifies
  the signature, the expiry and the nonce but neither ``aud`` nor ``iss``;
- the userinfo answer's ``sub`` checked against the ID token's (OpenID Connect Core
  5.3.2), both sets of claims merged (some providers put groups in one only);
- users found by the username claim, not by email; an unknown user refused unless
  ``VERITY_OIDC_CREATE_USERS`` is on; the group mapping applied (``services.sso``);
- every refusal raised as ``SignInRefused`` with its reason, for the callback page.
"""

from __future__ import annotations

from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from judgments.services.sso import sign_in_from_idp

from .config import (
    ProviderMetadata,
    group_roles,
    local_login_enabled,
    provider_metadata,
    sso_enabled,
)
from .errors import SignInRefused

AGAIN = "Start again from the login page"

#: pyjwt's refusal of an ID token → (reason, what the page says).
TOKEN_REFUSALS: list[tuple[type[jwt.PyJWTError], str, str]] = [
    (
        jwt.ExpiredSignatureError,
        "id_token_expired",
        "The identity provider's ID token had already expired when Verity received it. "
        f"{AGAIN}; if this happens again, the clocks of Verity and the identity provider "
        "disagree: tell an administrator.",
    ),
    (
        jwt.InvalidAudienceError,
        "wrong_audience",
        "The identity provider's ID token was issued for another application, not for "
        "this Verity (its audience is not VERITY_OIDC_CLIENT_ID). Tell an administrator: "
        "the client id of Verity and the one registered at the provider must match.",
    ),
    (
        jwt.InvalidIssuerError,
        "wrong_issuer",
        "The ID token was issued by another identity provider than the one this Verity "
        "trusts (its issuer is not VERITY_OIDC_ISSUER). Tell an administrator.",
    ),
    (
        jwt.ImmatureSignatureError,
        "id_token_not_yet_valid",
        "The identity provider's ID token is dated in the future. The clocks of Verity and "
        "the identity provider disagree: tell an administrator.",
    ),
    (
        jwt.InvalidIssuedAtError,
        "id_token_not_yet_valid",
        "The identity provider's ID token is dated in the future. The clocks of Verity and "
        "the identity provider disagree: tell an administrator.",
    ),
    (
        jwt.MissingRequiredClaimError,
        "id_token_incomplete",
        "The identity provider's ID token lacks a claim OpenID Connect requires. "
        "Tell an administrator.",
    ),
    (
        jwt.InvalidSignatureError,
        "bad_signature",
        "The ID token's signature does not match the identity provider's keys. "
        f"{AGAIN}; if it happens again, tell an administrator.",
    ),
]


def _refusal_for(exc: jwt.PyJWTError) -> SignInRefused:
    for kind, reason, message in TOKEN_REFUSALS:
        if isinstance(exc, kind):
            return SignInRefused(reason, message)
    return SignInRefused(
        "id_token_invalid",
        f"The identity provider's ID token could not be read ({exc}). {AGAIN}; if it "
        "happens again, tell an administrator.",
    )


class OIDCBackend(OIDCAuthenticationBackend):
    """Single sign-on through the configured OpenID provider (see the module's text)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The library reads its endpoints here; Verity's come from discovery, which costs a
        # request: done in authenticate(), only for a sign-in, not for every password login.
        self.UserModel = get_user_model()
        self.metadata: ProviderMetadata | None = None

    def authenticate(self, request: Any, **kwargs: Any) -> Any:
        # Only the callback view's call, which carries the nonce and code verifier of a
        # state it has checked; a password login (or a stray ?code=) never gets here.
        if request is None or not sso_enabled() or "nonce" not in kwargs:
            return None
        if "username" in kwargs or "password" in kwargs:
            return None
        self.metadata = provider_metadata()
        self.OIDC_OP_TOKEN_ENDPOINT = self.metadata.token_endpoint
        self.OIDC_OP_USER_ENDPOINT = self.metadata.userinfo_endpoint
        self.OIDC_OP_JWKS_ENDPOINT = self.metadata.jwks_uri
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        return super().authenticate(request, **kwargs)

    def get_user(self, user_id: Any) -> Any:
        # The library's get_user skips ModelBackend's is_active check: a deactivated
        # account would keep its single sign-on sessions.
        user = self.UserModel._default_manager.filter(pk=user_id).first()
        return user if user is not None and user.is_active else None

    # -- talking to the provider ------------------------------------------------------------

    def get_token(self, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            return super().get_token(payload)
        except requests.HTTPError as exc:
            answer = _error_of(exc.response)
            raise SignInRefused(
                "code_refused",
                f"The identity provider refused to exchange the sign-in code ({answer}). A "
                "code works once and for a few minutes only, with the browser that asked "
                f"for it. {AGAIN}.",
            ) from exc
        except requests.RequestException as exc:
            raise _unreachable(exc) from exc

    def retrieve_matching_jwk(self, token: str) -> Any:
        try:
            return super().retrieve_matching_jwk(token)
        except requests.RequestException as exc:
            raise _unreachable(exc) from exc
        except (SuspiciousOperation, KeyError, jwt.PyJWTError) as exc:
            raise SignInRefused(
                "bad_signature",
                "The ID token was signed with a key the identity provider does not publish. "
                f"{AGAIN}; if it happens again, tell an administrator.",
            ) from exc

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        if not token:
            raise SignInRefused(
                "id_token_missing",
                f"The identity provider sent no ID token (is 'openid' in VERITY_OIDC_SCOPES?). "
                f"{AGAIN}; if it happens again, tell an administrator.",
            )
        try:
            return super().verify_token(token, **kwargs)
        except SuspiciousOperation as exc:
            # Nonce mismatch, or the provider signed with another algorithm.
            raise SignInRefused(
                "id_token_invalid",
                f"The identity provider's ID token does not belong to this sign-in ({exc}). "
                f"{AGAIN}.",
            ) from exc
        except jwt.PyJWTError as exc:
            raise _refusal_for(exc) from exc

    def _verify_jws(self, payload: str, key: Any) -> dict[str, Any]:
        """The library's check (algorithm, signature, expiry) plus audience and issuer."""
        try:
            alg = jwt.get_unverified_header(payload).get("alg")
        except jwt.PyJWTError as exc:
            raise _refusal_for(exc) from exc
        if alg != self.OIDC_RP_SIGN_ALGO:
            raise SignInRefused(
                "id_token_invalid",
                f"The identity provider signed the ID token with {alg!r}, not with "
                f"{self.OIDC_RP_SIGN_ALGO!r} (VERITY_OIDC_SIGN_ALGO). Tell an administrator.",
            )
        assert self.metadata is not None
        try:
            return jwt.decode(
                payload,
                key,
                algorithms=[alg],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=self.metadata.issuer,
                leeway=settings.VERITY_OIDC_LEEWAY_SECONDS,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as exc:
            raise _refusal_for(exc) from exc

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        try:
            userinfo = super().get_userinfo(access_token, id_token, payload)
        except requests.RequestException as exc:
            raise _unreachable(exc) from exc
        if userinfo.get("sub") != payload.get("sub"):
            raise SignInRefused(
                "id_token_invalid",
                "The identity provider's user information is about another person than its "
                f"ID token (their 'sub' differ). {AGAIN}; tell an administrator if it persists.",
            )
        return {**payload, **userinfo}

    # -- who signs in -----------------------------------------------------------------------

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        claims = self.get_userinfo(access_token, id_token, payload)
        claim = settings.VERITY_OIDC_USERNAME_CLAIM
        username = claims.get(claim)
        if not isinstance(username, str) or not username.strip():
            raise SignInRefused(
                "username_missing",
                f"The identity provider did not say who you are: its answer has no '{claim}' "
                "claim (VERITY_OIDC_USERNAME_CLAIM). Tell an administrator of this Verity.",
            )
        username = self.UserModel.normalize_username(username.strip())
        longest = self.UserModel._meta.get_field(self.UserModel.USERNAME_FIELD).max_length
        if len(username) > longest:
            raise SignInRefused(
                "username_too_long",
                f"The identity provider's '{claim}' claim is {len(username)} characters long; "
                f"a Verity username has at most {longest}. Tell an administrator of this "
                "Verity (VERITY_OIDC_USERNAME_CLAIM may name the wrong claim).",
            )
        user = self.UserModel.objects.filter(username=username).first()
        if user is None and not settings.VERITY_OIDC_CREATE_USERS:
            raise SignInRefused(
                "unknown_user",
                f"The identity provider signed you in as '{username}', but this Verity has no "
                f"account with that username. Ask an administrator of this Verity to add you "
                f"(username '{username}'), then sign in again.",
                username=username,
            )
        if user is not None and not user.is_active:
            raise SignInRefused(
                "inactive_user",
                f"The Verity account '{username}' is deactivated. Ask an administrator of this "
                "Verity to reactivate it.",
                username=username,
            )
        email = claims.get(settings.VERITY_OIDC_EMAIL_CLAIM)
        groups = _groups_of(claims) if settings.VERITY_OIDC_GROUPS_CLAIM else None
        return sign_in_from_idp(
            user=user,
            username=username,
            email=email if isinstance(email, str) else None,
            groups=groups,
            mapping=group_roles(),
            request=self.request,
        )


def _groups_of(claims: dict[str, Any]) -> list[str]:
    """The user's groups: a list of names (or one name); absent means none."""
    value = claims.get(settings.VERITY_OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def _error_of(response: Any) -> str:
    try:
        body = response.json()
        return " - ".join(str(body[k]) for k in ("error", "error_description") if body.get(k))
    except (ValueError, AttributeError):
        return f"HTTP {getattr(response, 'status_code', '?')}"


def _unreachable(exc: Exception) -> SignInRefused:
    return SignInRefused(
        "provider_unreachable",
        f"Verity could not reach the identity provider ({type(exc).__name__}). Try again in a "
        "minute; if it persists, tell an administrator of this Verity.",
        status=502,
    )


class LocalLoginSwitch:
    """Refuses every password login over HTTP when ``VERITY_LOCAL_LOGIN=0``.

    No ``get_user``, on purpose: a backend with one would be the one ``force_login`` and
    sessions pick first, and this one finds nobody.

        Before ``ModelBackend``: ``PermissionDenied`` stops ``authenticate()`` there, for the
        login page and the admin's alike. Calls without a request (commands, the shell, a
        test's ``Client.login``) are not logins from outside and pass.
    """

    def authenticate(self, request: Any, username: Any = None, password: Any = None, **kw: Any):
        if request is not None and password is not None and not local_login_enabled():
            raise PermissionDenied("password logins are switched off (VERITY_LOCAL_LOGIN=0)")
        return None
