"""Production readiness: ``check --deploy`` is clean, production settings are what
docs/DEPLOY.md says, /healthz answers, the docs use local files, headers are set."""

from __future__ import annotations

import json
import os
import secrets
import string
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.db import OperationalError
from django.test import Client

REPO = Path(__file__).resolve().parents[2]


def production_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    alphabet = string.ascii_letters + string.digits + "!@#%^&*(-_=+)"
    # A clean environment, as on a server: nothing that the test session set (for example
    # the browser tests' DJANGO_ALLOW_ASYNC_UNSAFE) may leak into the check.
    env = {
        k: os.environ[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR") if k in os.environ
    }
    env.update(
        DEBUG="0",
        SECRET_KEY="".join(secrets.choice(alphabet) for _ in range(64)),
        ALLOWED_HOSTS="example.org",
        VERITY_VAR_DIR=str(tmp_path),
        **extra,
    )
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # a guard against a hang, not a speed limit: a busy machine is slow
        check=False,
    )


def test_check_deploy_finds_no_issue(tmp_path):
    result = manage(production_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    env = production_env(tmp_path)
    del env["SECRET_KEY"]
    result = manage(env, "check")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


PRINT_SETTINGS = """
import json
from django.conf import settings as s
print(json.dumps({
    "hsts": [s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_INCLUDE_SUBDOMAINS, s.SECURE_HSTS_PRELOAD],
    "ssl_redirect": s.SECURE_SSL_REDIRECT,
    "proxy_header": s.SECURE_PROXY_SSL_HEADER,
    "cookies": [s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_HTTPONLY],
    "nosniff": s.SECURE_CONTENT_TYPE_NOSNIFF,
    "referrer": s.SECURE_REFERRER_POLICY,
    "frames": s.X_FRAME_OPTIONS,
    "csrf_origins": s.CSRF_TRUSTED_ORIGINS,
    "static": s.STORAGES["staticfiles"]["BACKEND"],
    "database": s.DATABASES["default"]["ENGINE"],
    "axes": [s.AXES_ENABLED, s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME.total_seconds()],
}))
"""


def production_settings(tmp_path: Path, **extra: str) -> dict:
    result = manage(production_env(tmp_path, **extra), "shell", "-v", "0", "-c", PRINT_SETTINGS)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_settings_come_from_the_environment(tmp_path):
    s = production_settings(
        tmp_path,
        CSRF_TRUSTED_ORIGINS="https://example.org,https://verity.example.org",
        DATABASE_URL="postgres://verity@db.internal:5432/verity",
    )
    assert s["hsts"] == [31536000, True, True]
    assert s["ssl_redirect"] is True
    assert s["proxy_header"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert s["cookies"] == [True, True, True]
    assert (s["nosniff"], s["referrer"], s["frames"]) == (True, "same-origin", "DENY")
    assert s["csrf_origins"] == ["https://example.org", "https://verity.example.org"]
    assert s["static"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"
    assert s["database"] == "django.db.backends.postgresql"
    assert s["axes"] == [True, 5, 900.0]


def test_the_ssl_redirect_can_be_left_to_the_proxy(tmp_path):
    assert production_settings(tmp_path, SECURE_SSL_REDIRECT="0")["ssl_redirect"] is False


def test_collectstatic_builds_the_manifest_with_the_local_swagger_ui(tmp_path):
    env = production_env(tmp_path, STATIC_ROOT=str(tmp_path / "static"))
    result = manage(env, "collectstatic", "--no-input", "-v", "0")
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "static" / "staticfiles.json").read_text())["paths"]
    assert "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in manifest
    assert "css/verity.css" in manifest


# -- in-process ----------------------------------------------------------------------------


def test_healthz_checks_the_database(db):
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "jobs": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_healthz_is_503_when_the_database_is_down(db, monkeypatch):
    from judgments.api.views import health

    class Down:
        def cursor(self):
            raise OperationalError("connection refused")

    monkeypatch.setattr(health, "connection", Down())
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "error", "database": "unavailable: OperationalError"}


def test_every_response_carries_the_security_headers(db):
    response = Client().get("/accounts/login/")
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"


def test_the_schema_and_docs_are_served_from_local_files(db):
    client = Client()
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert schema.json()["info"]["title"] == "Verity API"
    for page in ("/api/docs/", "/api/redoc/"):
        html = client.get(page).content.decode()
        # Redoc's bundle is the sidecar's, served with its logo made local (api/docs.py).
        assert (
            "/static/drf_spectacular_sidecar/" in html or "/api/redoc/redoc.standalone.js" in html
        )
        assert "cdn.jsdelivr.net" not in html and "unpkg.com" not in html
    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")


@pytest.mark.parametrize(
    ("path", "hint"),
    [("/api/nothing-here/", ""), ("/api/collections", "Did you mean /api/collections/")],
)
def test_unknown_api_urls_answer_json_404(db, path, hint):
    response = Client().post(path)  # a POST too: no HTML CSRF page
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert hint in response.json()["detail"]
