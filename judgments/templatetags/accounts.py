"""The login page's choices: ``{% mail_can_be_sent as can_reset %}`` (password reset),
``{% sign_in_options as options %}`` (single sign-on, local passwords)."""

from __future__ import annotations

from django import template
from django.conf import settings

from ..sso.config import local_login_enabled, sso_enabled

register = template.Library()


@register.simple_tag
def mail_can_be_sent() -> bool:
    # Imported here: Django's template checks import every tag library at start-up, and
    # judgments.views imports every view (jobs/lazy_views.py).
    from ..views.accounts import mail_can_be_sent

    return mail_can_be_sent()


@register.simple_tag
def sign_in_options() -> dict[str, object]:
    return {
        "sso": sso_enabled(),
        "sso_name": settings.VERITY_OIDC_PROVIDER_NAME,
        "local": local_login_enabled(),
    }
