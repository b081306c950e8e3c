"""Start-up refuses a single sign-on set-up that cannot work, saying what to set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP = "import django; django.setup()"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param(
            {"VERITY_OIDC_ISSUER": "https://sso.example.org"},
            "set VERITY_OIDC_CLIENT_ID and VERITY_OIDC_CLIENT_SECRET too",
            id="issuer-without-client",
        ),
        pytest.param(
            {"VERITY_LOCAL_LOGIN": "0"},
            "VERITY_LOCAL_LOGIN=0 leaves no way to sign in",
            id="no-way-in",
        ),
        pytest.param(
            {"VERITY_OIDC_GROUP_ROLES": "search-team=web-search:owner"},
            "names the role 'owner'; use one of reviewer, evaluator, admin",
            id="unknown-role",
        ),
    ],
)
def test_a_set_up_that_cannot_work_stops_start_up(env, message):
    keep = {k: v for k, v in os.environ.items() if not k.startswith("VERITY_OIDC_")}
    result = subprocess.run(
        [sys.executable, "-c", SETUP],
        cwd=ROOT,
        env={**keep, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr
