"""``{% mail_can_be_sent as can_reset %}``: whether the log-in page offers password reset."""

from __future__ import annotations

from django import template

from ..views.accounts import mail_can_be_sent as _mail_can_be_sent

register = template.Library()


@register.simple_tag
def mail_can_be_sent() -> bool:
    return _mail_can_be_sent()
