"""Verity settings: one file, driven by the environment.

With nothing set, Verity runs in development mode on a SQLite file under ``var/``.
Production sets ``DEBUG=0``, ``SECRET_KEY``, ``ALLOWED_HOSTS`` and ``DATABASE_URL``;
docs/DEPLOY.md lists every variable read here.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from config.startup import hide_optional_modules

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VERITY_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [v.strip() for v in os.environ.get(name, default).split(",") if v.strip()]


DEBUG = env_bool("DEBUG", True)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost" if DEBUG else "")
# Origins allowed to send session-authenticated writes when they differ from the Host
# (e.g. "https://verity.example.org"); scheme included, comma-separated.
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc as local static files: no CDN
    "axes",
    "django_tasks",
    "django_tasks_db",  # the embedded job queue: a table in Verity's own database
    "jobs",
    "judgments",
    "scoring",
    "judges",
    "audit",
]

MIDDLEWARE = [
    # First, so that every response carries them, the http -> https redirect of
    # SECURE_SSL_REDIRECT (answered by SecurityMiddleware before the rest) included:
    # Content-Security-Policy (django-csp; the policy is below) and X-Frame-Options.
    "csp.middleware.CSPMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Page uploads stream to disk within VERITY_MAX_UPLOAD_BYTES (a form error beyond it);
    # before the CSRF check, which reads the body.
    "judgments.uploads.UploadLimitMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Cache-Control: private on what signed-in users and API clients see, no-store on
    # exports and downloads (judgments/caching.py).
    "judgments.caching.PrivateCacheMiddleware",
    # NUL in the path, a query parameter or a form field: 404/400 before any view (a
    # NUL reaching PostgreSQL is a 500). Inside the ones above, which add their headers.
    "judgments.middleware.refuse_nul",
    # A job its queue refused (Redis down): 503 with the reason, JSON under /api/.
    "jobs.middleware.QueueUnavailableMiddleware",
    # Last, as django-axes requires: it turns a locked-out login into its lockout response.
    "axes.middleware.AxesMiddleware",
]

# Scripts, styles, images, fonts and requests from this origin only; no inline script or
# style anywhere (every page takes its behaviour and look from files under static/), no
# plugins, no framing, forms post back here. Redoc's page alone adds inline styles: its
# renderer injects <style> elements (judgments/api/docs.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    },
}

AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out username+IP before any password is checked (django-axes;
    # it steps aside for authenticate() calls that come without a request).
    "judgments.api.auth.LoginLockoutBackend",
    # Refuses password logins when VERITY_LOCAL_LOGIN=0 (single sign-on only).
    "judgments.sso.backend.LocalLoginSwitch",
    "django.contrib.auth.backends.ModelBackend",
    # Single sign-on: answers only the OpenID Connect callback (judgments/sso/).
    "judgments.sso.backend.OIDCBackend",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # {{ n|counted:"query" }} on every page without a {% load %}: one plural rule.
            "builtins": ["judgments.templatetags.wording", "judgments.templatetags.fields"],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

# SQLite is the zero-set-up default; WAL and IMMEDIATE transactions keep several
# concurrent reviewers from hitting "database is locked" (see NOTES.md).
_sqlite_default = f"sqlite:///{VAR_DIR / 'verity.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", _sqlite_default),
        conn_max_age=60,
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))
if DEBUG:
    # WhiteNoise serves from STATIC_ROOT and warns when it is missing; in development the
    # files come from the app folders (finders) and the folder stays empty.
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
    WHITENOISE_USE_FINDERS = True
    WHITENOISE_AUTOREFRESH = True
MEDIA_ROOT = VAR_DIR / "media"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Production: hashed, compressed files from `collectstatic`, served by WhiteNoise with
    # far-future cache headers. Development serves the source files as they are.
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Uploads (runs, unit mappings) are streamed to a temporary file on disk in chunks and
# never held in memory; a request body larger than this is refused with 413 before it
# is read. Default 2 GiB.
VERITY_MAX_UPLOAD_BYTES = int(os.environ.get("VERITY_MAX_UPLOAD_BYTES", str(2 * 1024**3)))
FILE_UPLOAD_HANDLERS = ["django.core.files.uploadhandler.TemporaryFileUploadHandler"]
# Uploads in flight live in one folder of the app's own, not /tmp: a worker killed during
# an upload (gunicorn's timeout sends SIGKILL) leaves its temporary file behind, and the
# web and worker processes sweep what is older than VERITY_UPLOAD_STALE_SECONDS when they
# start (`manage.py sweep_uploads` does it on demand, e.g. from cron).
FILE_UPLOAD_TEMP_DIR = os.environ.get("FILE_UPLOAD_TEMP_DIR") or str(VAR_DIR / "uploads")
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
VERITY_UPLOAD_STALE_SECONDS = int(os.environ.get("VERITY_UPLOAD_STALE_SECONDS", "3600"))

# -- background jobs ---------------------------------------------------------------------------
# Long work (run imports, freezes, scoring, diagnosis, exports) runs as a job outside the
# request, through Django's Tasks API (django-tasks): task code never names a queue, these
# settings choose it. "database" (the default) keeps the queue in Verity's own database
# (django-tasks-db; workers: `manage.py jobs_worker`, SQLite or PostgreSQL). "rq" puts the
# same tasks on RQ over Redis (VERITY_REDIS_URL), for any number of workers on any number
# of machines. docs/DEPLOY.md shows both.
VERITY_JOBS_BACKEND = os.environ.get("VERITY_JOBS_BACKEND", "database").strip().lower()
VERITY_REDIS_URL = os.environ.get("VERITY_REDIS_URL", "redis://127.0.0.1:6379/0")
# Seconds a job may run before its worker stops it (jobs.runner.time_limit), on either
# backend: a setting of the workers' environment, read when the job runs.
VERITY_JOB_TIMEOUT = int(os.environ.get("VERITY_JOB_TIMEOUT", "14400"))
if VERITY_JOBS_BACKEND == "database":
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
elif VERITY_JOBS_BACKEND == "rq":
    TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["default"]}}
else:
    raise ImproperlyConfigured(
        f"VERITY_JOBS_BACKEND={VERITY_JOBS_BACKEND!r}: use 'database' (the default) or 'rq'"
    )
# RQ's own timeout is off (-1): it would be fixed when the job is queued, by the web
# process's settings; the worker's VERITY_JOB_TIMEOUT applies instead.
RQ_QUEUES = {"default": {"URL": VERITY_REDIS_URL, "DEFAULT_TIMEOUT": -1}}
# RQ workers must run django-tasks-rq's job class (it calls the task, not the function).
RQ = {"JOB_CLASS": "django_tasks_rq.backend.Job"}
if VERITY_JOBS_BACKEND == "rq":
    INSTALLED_APPS.insert(INSTALLED_APPS.index("jobs"), "django_rq")  # its rqworker command
# A job's uploaded input and its output files, and its progress (the cache below), live
# here. Several worker machines on the database backend share this folder (NFS or the
# like); on RQ the progress goes to Redis instead.
VERITY_JOB_DIR = Path(os.environ.get("VERITY_JOB_DIR", VAR_DIR / "jobs"))
# Each collection's latest canonical form (judgments/services/snapshot_forms.py): a cache
# that makes the next freeze cost what changed; local to a machine, safe to delete.
VERITY_FORM_DIR = Path(os.environ.get("VERITY_FORM_DIR", VAR_DIR / "forms"))
# Progress and heartbeats are written outside the database on purpose: an import runs in
# one all-or-nothing transaction, and on SQLite (one writer) any other write would wait
# for it to end. A file per job (or a Redis key) is visible at once, on either database.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "jobs": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": VERITY_REDIS_URL}
        if VERITY_JOBS_BACKEND == "rq"
        else {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VERITY_JOB_DIR / "progress"),
        }
    ),
}
STORAGES["jobs"] = {
    "BACKEND": "django.core.files.storage.FileSystemStorage",
    "OPTIONS": {"location": str(VERITY_JOB_DIR / "files")},
}
# A running job writes a heartbeat this often; one silent for VERITY_JOB_STALE_SECONDS is
# taken for dead (its worker was killed or its machine stopped) and marked failed.
VERITY_JOB_HEARTBEAT_SECONDS = float(os.environ.get("VERITY_JOB_HEARTBEAT_SECONDS", "5"))
VERITY_JOB_STALE_SECONDS = float(os.environ.get("VERITY_JOB_STALE_SECONDS", "60"))
# API requests at most this big are done in the request (201/200) unless the client sends
# "Prefer: respond-async"; bigger ones become a job (202 Accepted + Location).
# The audit log keeps rows this many days (audit.services.prune, run by ``audit_log --prune``);
# 0 keeps them for ever.
VERITY_AUDIT_RETENTION_DAYS = int(os.environ.get("VERITY_AUDIT_RETENTION_DAYS", "0"))
# Who may create collections in the browser (/c/new/): "superusers" (the default), "staff"
# (staff users and superusers) or "everyone" (any signed-in user). The creator becomes the
# new collection's admin. Commands (import_collection, import_trec) are the operator's.
VERITY_COLLECTION_CREATORS = os.environ.get("VERITY_COLLECTION_CREATORS", "superusers").strip()
if VERITY_COLLECTION_CREATORS not in ("superusers", "staff", "everyone"):
    raise ImproperlyConfigured(
        f"VERITY_COLLECTION_CREATORS={VERITY_COLLECTION_CREATORS!r}: use 'superusers' (the "
        "default), 'staff' or 'everyone'"
    )
VERITY_INLINE_MAX_BYTES = int(os.environ.get("VERITY_INLINE_MAX_BYTES", str(2 * 1024**2)))
VERITY_INLINE_MAX_ROWS = int(os.environ.get("VERITY_INLINE_MAX_ROWS", "200000"))
# A run upload is imported in the request only when it is small in work too: at most this
# many ranked ids (TREC lines) and stages (scoring/run_work.py has the measurements).
VERITY_INLINE_MAX_IDS = int(os.environ.get("VERITY_INLINE_MAX_IDS", "50000"))
VERITY_INLINE_MAX_STAGES = int(os.environ.get("VERITY_INLINE_MAX_STAGES", "20"))

# Model judges (judges/egress.py, docs/DEPLOY.md "Model judges"): the hosts a judge may
# call (host, host:port, an address or a network that may then be private), and extra
# environment variables a judge may read its key from besides VERITY_JUDGE_KEY_*.
VERITY_JUDGE_HOSTS = env_list("VERITY_JUDGE_HOSTS")
VERITY_JUDGE_KEY_ENVS = env_list("VERITY_JUDGE_KEY_ENVS")

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# DRF's compat module (and Django's test tools, which drf-spectacular imports), when
# first imported, skip the optional libraries that Verity does not use through them
# (psycopg even on SQLite, PyYAML, requests, Pygments, Jinja2): config/startup.py.
hide_optional_modules()

REST_FRAMEWORK = {
    # Token first: an anonymous request is answered 401 with "WWW-Authenticate: Token"
    # (DRF takes that header from the first class); the browser's session comes second,
    # and DRF enforces CSRF on every session-authenticated write.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "judgments.api.auth.TokenOrBearerAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Bounded: depth, lone surrogates, NUL (judgments/api/parsers.py).
    "DEFAULT_PARSER_CLASSES": ["judgments.api.parsers.BoundedJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "judgments.api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "judgments.api.schema.VerityAutoSchema",
    "EXCEPTION_HANDLER": "judgments.api.errors.exception_handler",
    # `?format=` names an export format (qrels: trec or jsonl), not a renderer.
    "URL_FORMAT_OVERRIDE": None,
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Verity API",
    "DESCRIPTION": (
        "Relevance judgments, snapshots, runs and evaluations. Authenticate with "
        "`Authorization: Token <key>` (or `Bearer <key>`); create a key on /accounts/tokens/ "
        "or with `manage.py api_token create USERNAME --name NAME`. Anonymous requests get 401; a "
        "collection you are not a member of answers 404; a role too weak for the operation "
        'answers 403. Errors are JSON: `{"detail": ..., "errors": [{"field", '
        '"message"}]}`.'
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/",
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "QueryStatusEnum": "judgments.models.QueryStatus",
        "TaskStatusEnum": "judgments.models.TaskStatus",
        "RoleEnum": "judgments.models.Role",
        "LabelingUnitEnum": "judgments.models.LabelingUnit",
        "EvaluationStatusEnum": ["ok", "undefined"],
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
    ],
}

# Login brute-force protection: 5 failed logins for one username from one IP lock that
# pair out for 15 minutes (django-axes answers 429; a try while locked restarts the 15
# minutes). AXES_ENABLED=0 turns it off. Tests may keep it on: authenticate() without a
# request (Client.login) is not locked out (judgments/api/auth.py).
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("AXES_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# The client address: REMOTE_ADDR, or behind N trusted proxies the Nth address from the
# right of X-Forwarded-For (VERITY_TRUSTED_PROXIES=1 behind one reverse proxy).
AXES_CLIENT_IP_CALLABLE = "judgments.api.auth.client_ip"
VERITY_TRUSTED_PROXIES = int(os.environ.get("VERITY_TRUSTED_PROXIES", "0"))

# API tokens (judgments/models/tokens.py): a new token lives VERITY_TOKEN_DAYS days unless
# its maker picks fewer or more, never more than VERITY_TOKEN_MAX_DAYS.
VERITY_TOKEN_DAYS = int(os.environ.get("VERITY_TOKEN_DAYS", "90"))
VERITY_TOKEN_MAX_DAYS = int(os.environ.get("VERITY_TOKEN_MAX_DAYS", "365"))
if not 1 <= VERITY_TOKEN_DAYS <= VERITY_TOKEN_MAX_DAYS:
    raise ImproperlyConfigured(
        f"VERITY_TOKEN_DAYS={VERITY_TOKEN_DAYS} must be between 1 and "
        f"VERITY_TOKEN_MAX_DAYS={VERITY_TOKEN_MAX_DAYS}"
    )

# -- single sign-on (OpenID Connect) -----------------------------------------------------------
# On when VERITY_OIDC_ISSUER is set (docs/DEPLOY.md "Single sign-on"): the provider's
# endpoints and keys come from its discovery document (<issuer>/.well-known/openid-
# configuration), fetched on the first sign-in. mozilla-django-oidc runs the authorization
# code flow with PKCE; judgments/sso/ adds what it leaves out (the ID token's audience and
# issuer), the claims Verity reads, and the mapping of IdP groups to collection roles.
VERITY_OIDC_ISSUER = os.environ.get("VERITY_OIDC_ISSUER", "").strip()
VERITY_OIDC_CLIENT_ID = os.environ.get("VERITY_OIDC_CLIENT_ID", "").strip()
VERITY_OIDC_CLIENT_SECRET = os.environ.get("VERITY_OIDC_CLIENT_SECRET", "")
if VERITY_OIDC_ISSUER and not (VERITY_OIDC_CLIENT_ID and VERITY_OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured(
        "VERITY_OIDC_ISSUER is set: set VERITY_OIDC_CLIENT_ID and VERITY_OIDC_CLIENT_SECRET "
        "too (the client registered for Verity at the identity provider)."
    )
# The name on the sign-in button ("Sign in with <name>").
VERITY_OIDC_PROVIDER_NAME = os.environ.get("VERITY_OIDC_PROVIDER_NAME", "single sign-on")
# The claims (from the ID token and the userinfo answer) that give the Verity username,
# the email address and, optionally, the list of the user's IdP groups.
VERITY_OIDC_USERNAME_CLAIM = os.environ.get("VERITY_OIDC_USERNAME_CLAIM", "preferred_username")
VERITY_OIDC_EMAIL_CLAIM = os.environ.get("VERITY_OIDC_EMAIL_CLAIM", "email")
VERITY_OIDC_GROUPS_CLAIM = os.environ.get("VERITY_OIDC_GROUPS_CLAIM", "")
# "idp-group=collection-slug:role,...": a member of the group gets the role in the
# collection, at each sign-in; ";" or new lines separate the pairs instead when group
# names hold commas (LDAP DNs). Parsed and checked by judgments/sso/config.py.
VERITY_OIDC_GROUP_ROLES = os.environ.get("VERITY_OIDC_GROUP_ROLES", "")
# An unknown user (no Verity account with that username) is refused unless this is on.
VERITY_OIDC_CREATE_USERS = env_bool("VERITY_OIDC_CREATE_USERS", False)
VERITY_OIDC_SCOPES = os.environ.get("VERITY_OIDC_SCOPES", "openid email profile")
# Clock difference tolerated between Verity and the provider when checking exp and iat.
VERITY_OIDC_LEEWAY_SECONDS = int(os.environ.get("VERITY_OIDC_LEEWAY_SECONDS", "30"))
# Local passwords: VERITY_LOCAL_LOGIN=0 hides the password form and refuses password
# logins (the login page, the admin's); single sign-on is then the only way in.
VERITY_LOCAL_LOGIN = env_bool("VERITY_LOCAL_LOGIN", True)
if not VERITY_LOCAL_LOGIN and not VERITY_OIDC_ISSUER:
    raise ImproperlyConfigured(
        "VERITY_LOCAL_LOGIN=0 leaves no way to sign in: configure single sign-on "
        "(VERITY_OIDC_ISSUER, ...) or keep local passwords."
    )
# mozilla-django-oidc's own settings, from the ones above. The provider's endpoints are
# not settings: judgments/sso/ reads them from the discovery document.
OIDC_RP_CLIENT_ID = VERITY_OIDC_CLIENT_ID
OIDC_RP_CLIENT_SECRET = VERITY_OIDC_CLIENT_SECRET
OIDC_RP_SIGN_ALGO = os.environ.get("VERITY_OIDC_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = VERITY_OIDC_SCOPES
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_USE_NONCE = True
OIDC_CREATE_USER = VERITY_OIDC_CREATE_USERS
OIDC_TIMEOUT = int(os.environ.get("VERITY_OIDC_TIMEOUT_SECONDS", "10"))
OIDC_AUTHENTICATION_CALLBACK_URL = "sso-callback"

# Mail, used only for password reset. Without EMAIL_HOST no mail leaves the server
# (with DEBUG on, mails are printed on the console instead): the reset page then says to
# ask an administrator rather than claim it sent a mail (judgments/views/accounts.py).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "587"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "verity@localhost")
EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST or not DEBUG
    else "django.core.mail.backends.console.EmailBackend",
)

# Security headers, on in every mode (Django's defaults, stated so that nobody wonders).
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

if not DEBUG:
    # TLS is terminated by the reverse proxy, which must set X-Forwarded-Proto.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # SECURE_SSL_REDIRECT=0 when the proxy redirects to https itself; `check --deploy`
    # then says so (security.W008), which is the reminder that it must.
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # A load balancer probes /healthz over plain HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # django-axes logs every start and failed login at INFO; lock-outs are WARNING.
    "loggers": {"axes": {"level": os.environ.get("AXES_LOG_LEVEL", "WARNING")}},
}
