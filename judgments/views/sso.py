"""Single sign-on pages: start a sign-in at the provider, take its answer, say why not.

mozilla-django-oidc's two views run the authorization code flow with PKCE: the start
keeps a state, a nonce and a code verifier in the session and sends the browser to the
provider; the callback checks the state, drops it (a state works once) and has the
backend (``judgments/sso/backend.py``) exchange the code and check the ID token. Here
they read the provider's endpoints from discovery, and every refusal becomes a page that
says what went wrong and what to do (4xx, never a 500), with a ``login.failed`` audit row.

With ``VERITY_LOCAL_LOGIN=0`` the login page shows only the single sign-on button, and
password POSTs (here and on the admin's login) are refused.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from audit.services import record

from ..sso.config import local_login_enabled, provider_metadata, sso_enabled
from ..sso.errors import SignInRefused

AGAIN = "Start again from the login page"


def refuse(request: HttpRequest, refusal: SignInRefused) -> HttpResponse:
    """The page for a refused sign-in, and its audit row."""
    record(
        "login.failed",
        actor=None,
        target=refusal.username,
        detail={"method": "oidc", "reason": refusal.reason},
        request=request,
    )
    return render(
        request,
        "registration/sso_failed.html",
        {"refusal": refusal, "provider": settings.VERITY_OIDC_PROVIDER_NAME},
        status=refusal.status,
    )


class SignInStart(OIDCAuthenticationRequestView):
    """GET /oidc/login/?next=…: off to the provider, with state, nonce and PKCE."""

    def __init__(self, **kwargs: Any) -> None:
        # The library reads the authorization endpoint from the settings here; Verity's
        # comes from discovery, in get().
        super(OIDCAuthenticationRequestView, self).__init__(**kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso_enabled():
            raise Http404("Single sign-on is not configured on this Verity.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider_metadata().authorization_endpoint
        except SignInRefused as refusal:
            return refuse(request, refusal)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


class SignInCallback(OIDCAuthenticationCallbackView):
    """GET /oidc/callback/?code=…&state=…: the provider's answer."""

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso_enabled():
            raise Http404("Single sign-on is not configured on this Verity.")
        try:
            return super().get(request)
        except SignInRefused as refusal:
            return refuse(request, refusal)
        except SuspiciousOperation:
            # The library's "state not found in session": a forged or replayed answer, or
            # one meant for another browser's sign-in.
            return refuse(
                request,
                SignInRefused(
                    "state_mismatch",
                    "This answer from the identity provider does not match a sign-in started "
                    "in this browser (its state is unknown or was already used). "
                    f"{AGAIN}, in one browser tab.",
                    status=400,
                ),
            )

    def login_failure(self) -> HttpResponse:
        request = self.request
        error = request.GET.get("error")
        if error:
            description = request.GET.get("error_description", "")
            said = f"{error}: {description}" if description else error
            refusal = SignInRefused(
                "provider_error",
                f"The identity provider did not sign you in ({said}). {AGAIN}; if you "
                "should have access, ask an administrator of this Verity.",
            )
        elif "code" not in request.GET or "state" not in request.GET:
            refusal = SignInRefused(
                "incomplete_answer",
                f"This address expects the identity provider's answer (a code and a state) "
                f"and got none. {AGAIN}.",
                status=400,
            )
        elif "oidc_states" not in request.session:
            refusal = SignInRefused(
                "no_sign_in_started",
                "This browser has no sign-in in progress: it was started in another browser, "
                f"or this browser's session ended. {AGAIN}.",
                status=400,
            )
        else:
            refusal = SignInRefused(
                "not_signed_in", f"The sign-in did not complete. {AGAIN}.", status=403
            )
        return refuse(request, refusal)


def login(request: HttpRequest) -> HttpResponse:
    """Django's login page; with local passwords off, a password POST is refused."""
    if request.method == "POST" and not local_login_enabled():
        return render(
            request,
            "registration/login.html",
            {"local_login_refused": True, "next": request.POST.get("next", "")},
            status=403,
        )
    return auth_views.LoginView.as_view()(request)


def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's login: its own password form, or single sign-on only."""
    if local_login_enabled():
        return admin.site.login(request)
    target = request.GET.get("next") or reverse("admin:index")
    return redirect(f"{reverse('login')}?{urlencode({'next': target})}")
