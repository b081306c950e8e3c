"""The operator's rules for what a judge may send where, read from the settings.

``VERITY_JUDGE_HOSTS`` lists the hosts judges may call (``providers.outbound`` has the
format); API keys come only from environment variables whose names start with
``VERITY_JUDGE_KEY_`` or that ``VERITY_JUDGE_KEY_ENVS`` lists. Checked when a judge is
saved (form, admin) and again when it runs, so a judge saved before these rules, or
before the operator changed them, sends nothing they refuse.
"""

from __future__ import annotations

import re

from django.conf import settings

from .providers.outbound import AllowList, OutboundRefused, Target, check_target, normalise

KEY_PREFIX = "VERITY_JUDGE_KEY_"
_KEY_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,99}$")


def allow_list() -> AllowList:
    """The parsed allow-list; ``OutboundRefused`` when an entry cannot be read (so a
    typo of the operator's refuses every judge, with the reason, instead of a 500)."""
    try:
        return AllowList.parse(getattr(settings, "VERITY_JUDGE_HOSTS", []))
    except ValueError as exc:
        raise OutboundRefused(f"{exc}; the server's operator must correct it") from None


def key_env_problem(name: str) -> str:
    """Why ``name`` may not be a judge's key variable, or "" when it may."""
    if not name:
        return ""
    extra = set(getattr(settings, "VERITY_JUDGE_KEY_ENVS", []))
    if name in extra or (name.startswith(KEY_PREFIX) and _KEY_NAME.match(name)):
        return ""
    return (
        f"'{name}' is not a judge key variable: the server reads judges' keys only from "
        f"environment variables named {KEY_PREFIX}… (e.g. {KEY_PREFIX}OPENAI) or listed by "
        "the operator in VERITY_JUDGE_KEY_ENVS; ask the operator which one holds this key"
    )


def checked_target(base_url: str, *, resolve: bool = True) -> Target:
    """The judge's URL normalised and allowed; ``OutboundRefused`` says why not."""
    target = normalise(base_url)
    check_target(target, allow_list(), resolve=resolve)
    return target


__all__ = ["KEY_PREFIX", "OutboundRefused", "allow_list", "checked_target", "key_env_problem"]
