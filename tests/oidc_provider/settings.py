"""Settings of the test OpenID provider (see ``__init__``): everything from the harness."""

import os
from pathlib import Path

SECRET_KEY = "test-oidc-provider-only"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.oidc_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).resolve().parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["OIDC_PROVIDER_DB"]}
}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
USE_TZ = True
LOGIN_URL = "/login/"
# Verity and the provider share a host name in the browser test (cookies ignore ports).
SESSION_COOKIE_NAME = "op_sessionid"
CSRF_COOKIE_NAME = "op_csrftoken"

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": os.environ["OIDC_PROVIDER_RSA_KEY"],
    "OIDC_ISS_ENDPOINT": os.environ["OIDC_PROVIDER_ISSUER"],
    "PKCE_REQUIRED": True,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 120,
    "SCOPES": {
        "openid": "OpenID Connect",
        "email": "Email address",
        "profile": "Profile",
    },
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.provider.Validator",
}
