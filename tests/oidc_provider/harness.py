"""Starting the test OpenID provider in its own process, and talking to it.

``start_provider`` generates the RS256 key, picks a free port, runs ``serve`` with
``runserver`` and waits for its discovery document (a second or two: one migrate of a
fresh SQLite file). A provider that does not come up fails the test with its log.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0


@dataclass
class Provider:
    url: str
    issuer: str
    client_id: str
    client_secret: str
    process: subprocess.Popen[bytes]
    log: Path

    def verity_settings(self) -> dict[str, Any]:
        """Verity's settings for signing in here (as VERITY_OIDC_* would make them)."""
        return {
            "VERITY_OIDC_ISSUER": self.issuer,
            "VERITY_OIDC_CLIENT_ID": self.client_id,
            "VERITY_OIDC_CLIENT_SECRET": self.client_secret,
            "OIDC_RP_CLIENT_ID": self.client_id,
            "OIDC_RP_CLIENT_SECRET": self.client_secret,
            "VERITY_OIDC_PROVIDER_NAME": "Test IdP",
            "VERITY_OIDC_USERNAME_CLAIM": "preferred_username",
            "VERITY_OIDC_EMAIL_CLAIM": "email",
            "VERITY_OIDC_GROUPS_CLAIM": "groups",
            "VERITY_OIDC_GROUP_ROLES": "",
            "VERITY_OIDC_CREATE_USERS": False,
            "VERITY_LOCAL_LOGIN": True,
        }

    def control(self, **body: Any) -> dict[str, Any]:
        response = requests.post(f"{self.url}/control/", json=body, timeout=10)
        response.raise_for_status()
        return response.json()

    def reset(self) -> None:
        self.control(action="reset")

    def add_user(self, username: str, password: str, *, email: str = "", groups=()) -> None:
        self.control(
            action="user", username=username, password=password, email=email, groups=list(groups)
        )

    def misbehave(self, **wrong: Any) -> None:
        """The next ID tokens: ``exp_offset`` seconds from now, ``aud``, ``iss``."""
        self.control(action="misbehave", **wrong)

    def allow_redirect_uri(self, uri: str) -> None:
        self.control(action="redirect_uri", uri=uri)

    def challenge_methods(self) -> list[str]:
        return self.control(action="status")["challenge_methods"]

    def sign_in(self, authorize_url: str, username: str, password: str) -> str:
        """Be the browser at the provider: log in there; return where it sends back to
        (Verity's callback URL with the code and the state)."""
        browser = requests.Session()
        page = browser.get(authorize_url, timeout=10)  # redirected to the login form
        page.raise_for_status()
        assert "/login/" in page.url, f"expected the provider's login page, got {page.url}"
        answer = browser.post(
            page.url,
            data={
                "username": username,
                "password": password,
                "csrfmiddlewaretoken": browser.cookies["op_csrftoken"],
            },
            allow_redirects=False,
            timeout=10,
        )
        assert answer.status_code == 302, f"provider login refused: {answer.status_code}"
        back = browser.get(urljoin(self.url, answer.headers["Location"]), allow_redirects=False)
        assert back.status_code == 302, f"authorization refused: {back.status_code} {back.text}"
        return back.headers["Location"]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_provider(workdir: Path) -> Provider:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    issuer = f"{url}/o"
    client_id, client_secret = "verity-test-client", secrets.token_urlsafe(24)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))},
        "OIDC_PROVIDER_DB": str(workdir / "provider.sqlite3"),
        "OIDC_PROVIDER_RSA_KEY": pem,
        "OIDC_PROVIDER_ISSUER": issuer,
        "OIDC_PROVIDER_CLIENT_ID": client_id,
        "OIDC_PROVIDER_CLIENT_SECRET": client_secret,
        "PYTHONUNBUFFERED": "1",
    }
    log = workdir / "provider.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.oidc_provider.serve", str(port)],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    provider = Provider(url, issuer, client_id, client_secret, process, log)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the test OpenID provider exited:\n{log.read_text()}")
        try:
            if requests.get(f"{issuer}/.well-known/openid-configuration", timeout=2).ok:
                return provider
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    provider.stop()
    raise RuntimeError(
        f"the test OpenID provider did not start in {START_TIMEOUT}s:\n{log.read_text()}"
    )
