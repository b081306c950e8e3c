"""Start-up stays light: heavy libraries are imported where they are used.

Every management command loads the settings, the apps and (through its system checks) the
whole URL configuration before it does anything; a worker or a web process does the same.
None of that may import numpy, scipy, pyarrow or drf-spectacular's views (~1 s of imports
together), nor scikit-learn, krippendorff, wordllama, redis or rq: they belong to scoring,
statistics, schema generation, agreement, model judges and the RQ backend, which import
them when they run. Nor may it import what only DRF's and Django's optional-library
probes asked for (psycopg on SQLite, PyYAML, requests, Pygments, Jinja2: hidden from them
by config/startup.py) or any view module (imported on first use: jobs/lazy_views.py); and
start-up runs without cyclic garbage collection until the URLs have loaded. Each case
starts a new interpreter, so nothing imported by other tests can hide an import.
``bench/startup_bench.py`` times the same processes.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Also the libraries of agreement (krippendorff), model-judge calibration (sklearn), the
# offline judge (wordllama) and the RQ job backend (redis, rq): each is imported where it
# is used, never by a command's start-up.
HEAVY = (
    "numpy",
    "scipy",
    "pyarrow",
    "pandas",
    "drf_spectacular.views",
    "sklearn",
    "krippendorff",
    "wordllama",
    "redis",
    "rq",
)

# Installed, but not used by Verity through DRF's compat module, which probes them at
# import (config/startup.py hides them from it): a process that does not use them
# itself does not load them. psycopg also loads on PostgreSQL, for the database.
# Jinja2 is optional here: hidden from django.test.utils when installed.
HAS_JINJA2 = importlib.util.find_spec("jinja2") is not None
OPTIONAL = ("yaml", "requests", "urllib3", "pygments", "markdown_it", "jinja2")
if "postgres" not in os.environ.get("DATABASE_URL", ""):
    OPTIONAL += ("psycopg",)

# The views and what they import (serializers, drf-spectacular's schema machinery and
# with it Django's test client): imported on first use (jobs/lazy_views.py), not by the
# URL checks.
VIEWS = (
    "judgments.views",
    "judgments.api.views",
    "scoring.views",
    "scoring.api.views",
    "jobs.api",
    "judges.api",
    "drf_spectacular.openapi",
    "django.test",
)

SETUP = (
    "import os, sys\n"
    "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
    "import django\n"
    "django.setup()\n"
)
URLS = "from django.urls import get_resolver\nget_resolver().url_patterns\n"
# Every command's module, as `manage.py COMMAND` imports it before running it.
COMMANDS = (
    "from django.core.management import get_commands, load_command_class\n"
    "for name, app in get_commands().items():\n"
    "    load_command_class(app, name)\n"
)
CHECK = "from django.core.management import call_command\ncall_command('check', verbosity=0)\n"
REPORT = (
    f"print('HEAVY:' + ','.join(m for m in {HEAVY + OPTIONAL + VIEWS!r} if m in sys.modules))\n"
)


def _heavy_after(code: str) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code + REPORT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # guards against a hang only
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = (line for line in proc.stdout.splitlines() if line.startswith("HEAVY:"))
    return [m for m in line.removeprefix("HEAVY:").split(",") if m]


@pytest.mark.parametrize(
    ("code", "allowed"),
    [
        (
            "import os, sys\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
            "import config.settings\n",
            [],
        ),
        (SETUP, []),
        (SETUP + URLS, []),
        # drf-spectacular's `spectacular` command imports its YAML renderer, Django's
        # `test` and `testserver` commands its test tools.
        (SETUP + URLS + COMMANDS, ["yaml", "django.test"]),
        (SETUP + CHECK, []),
        ("import sys, verity_eval, verity_eval.params\n", []),
    ],
    ids=["settings", "django-setup", "url-conf", "every-command-module", "check", "engine"],
)
def test_start_up_imports_no_heavy_library(code: str, allowed: list[str]) -> None:
    assert _heavy_after(code) == allowed


def test_the_probe_sees_a_heavy_import() -> None:
    """The check above would pass vacuously if the probe could not see an import."""
    assert _heavy_after(
        SETUP + "import scoring.comparison\nscoring.comparison.describe([1], [0])\n"
    ) == ["numpy"]
    assert _heavy_after(SETUP + "from verity_eval import evaluate\n") == ["numpy", "pyarrow"]
    optional = _heavy_after(SETUP + "import requests, markdown_it\n")
    assert optional == ["requests", "urllib3", "markdown_it"]
    if HAS_JINJA2:  # not a requirement (bench/requirements.txt's Locust brings it)
        assert _heavy_after(SETUP + "import jinja2\n") == ["jinja2"]


# The services and selectors (with the formats, the HTTP client of model judges and the
# run readers they bring: over half of the project's own modules) are imported by what
# uses them, not by a command's start-up: the admin, the apps' hooks, the template tags,
# the middleware and the error handlers import them when they are called.
SERVICES = (
    "judgments.services",
    "judgments.selectors",
    "judgments.formats",
    "scoring.services",
    "scoring.bundles",
    "judges.services",
    "judges.selectors",
    "jobs.services",
    "jobs.selectors",
)


@pytest.mark.parametrize(
    "code", [SETUP, SETUP + URLS, SETUP + CHECK], ids=["setup", "urls", "check"]
)
def test_start_up_imports_no_service_module(code: str) -> None:
    report = f"print('LOADED:' + ','.join(m for m in {SERVICES!r} if m in sys.modules))\n"
    (line,) = (x for x in _run(code + report).splitlines() if x.startswith("LOADED:"))
    assert line == "LOADED:"
    # and the probe sees them when they are used
    used = _run(SETUP + "import judgments.admin, judgments.services\n" + report)
    assert "LOADED:judgments.services,judgments.selectors,judgments.formats" in used


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # guards against a hang only
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_start_up_runs_without_collections_and_ends_with_them_back() -> None:
    """manage.py pauses the cyclic collector until the URL configuration has loaded
    (config/startup.py), then freezes what start-up made and collects as usual."""
    out = _run(
        "import atexit, gc, sys\n"
        "seen = []\n"
        "gc.callbacks.append(lambda phase, info: gc.get_threshold()[0] > 700 and seen.append(1))\n"
        "import django\n"
        "setup = django.setup\n"
        "def spy(*args, **kwargs):\n"
        "    setup(*args, **kwargs)\n"
        "    print('AT-READY', gc.get_threshold()[0], len(seen))\n"
        "django.setup = spy\n"
        "atexit.register(lambda: print('AT-EXIT', gc.get_threshold()[0], gc.get_freeze_count() > 0"
        ", len(seen), len(gc.callbacks)))\n"
        "sys.argv = ['manage.py', 'check']\n"
        "exec(compile(open('manage.py').read(), 'manage.py', 'exec'))\n"
    )
    lines = dict(line.split(" ", 1) for line in out.splitlines() if line.startswith("AT-"))
    # Settings, apps and models loaded: no collection yet.
    assert lines["AT-READY"] == "1000000 0"
    threshold, frozen, _, callbacks = lines["AT-EXIT"].split()
    assert (threshold, frozen) == ("700", "True")
    # Only the spy is left: start-up's own callback is gone (config/startup.py says why).
    assert callbacks == "1"


def test_a_process_that_never_ends_start_up_gets_its_collector_back() -> None:
    """manage.py shell never loads the URL configuration: the first collection ends the
    pause (here after 1,000 objects instead of a million)."""
    out = _run(
        "import gc\n"
        "from config import startup\n"
        "startup.PAUSED_THRESHOLD = 1000\n"
        "startup.pause_gc()\n"
        "print('PAUSED', gc.get_threshold()[0])\n"
        "keep = [[] for _ in range(5000)]\n"
        "print('AFTER', gc.get_threshold()[0])\n"
        "print('LEFT', [getattr(f, '__module__', None) for f in gc.callbacks])\n"
    )
    # The callback replaced itself by a C function: no Python code of start-up is left
    # in the collector, where a signal handler's exception would be swallowed.
    assert out.split() == ["PAUSED", "1000", "AFTER", "700", "LEFT", "['_operator']"]


def test_optional_modules_are_hidden_from_their_probes_only() -> None:
    out = _run(
        SETUP + CHECK + "from rest_framework import compat\n"
        "print('COMPAT', compat.postgres_fields, compat.yaml, compat.requests, compat.pygments)\n"
        "from django.test import utils\n"
        "print('TEST-UTILS', utils.jinja2)\n"
        "import yaml\n"
        "print('YAML', yaml.safe_dump({'a': 1}).strip())\n"
        + (
            "import jinja2\nprint('JINJA2', jinja2.Template('{{ 1 + 1 }}').render())\n"
            if HAS_JINJA2
            else ""
        )
    )
    assert "COMPAT None None None None" in out
    assert "TEST-UTILS None" in out
    assert "YAML a: 1" in out
    assert ("JINJA2 2" in out) == HAS_JINJA2


def test_no_model_field_is_a_postgresql_field() -> None:
    """rest_framework.compat.postgres_fields is None (config/startup.py): DRF's
    ModelSerializer would not map an ArrayField, HStoreField or range field. Verity's
    models have none; a new one must take compat's postgres import back out of
    HIDDEN_FROM."""
    out = _run(
        SETUP + "from django.apps import apps\n"
        "for model in apps.get_models():\n"
        "    for field in model._meta.get_fields():\n"
        "        if type(field).__module__.startswith('django.contrib.postgres'):\n"
        "            print('POSTGRES-FIELD', model.__name__, field.name)\n"
        "print('MODELS', len(apps.get_models()))\n"
    )
    assert "POSTGRES-FIELD" not in out
    assert int(out.split("MODELS ")[1]) > 30


def test_every_lazy_view_imports_and_answers_as_its_view() -> None:
    """A URL pattern names its view by a dotted path (jobs/lazy_views.py): a misspelt one
    would fail only at its first request, so each is imported here. What Django and
    drf-spectacular read of a view reaches the real one."""
    out = _run(
        SETUP + "from django.urls import URLPattern, URLResolver, get_resolver, resolve\n"
        "from jobs.lazy_views import LazyView\n"
        "def walk(patterns):\n"
        "    for p in patterns:\n"
        "        if isinstance(p, URLResolver):\n"
        "            yield from walk(p.url_patterns)\n"
        "        else:\n"
        "            yield p\n"
        "patterns = list(walk(get_resolver().url_patterns))\n"
        "lazy = [p for p in patterns if isinstance(p.callback, LazyView)]\n"
        "for p in lazy:\n"
        "    assert callable(p.callback.view), p\n"
        "    assert not isinstance(p.callback.view, LazyView), p\n"
        "print('LAZY', len(lazy))\n"
        "match = resolve('/api/collections/')\n"
        "print('API', match.view_name, match.func.cls.__name__, match.func.csrf_exempt)\n"
        "match = resolve('/healthz')\n"
        "print('FUNC', match.view_name, match._func_path)\n"
    )
    assert int(out.split("LAZY ")[1].split()[0]) > 90  # every view of Verity's: 97 today
    assert "API judgments-api:collections CollectionListView True" in out
    assert "FUNC healthz judgments.api.views.healthz" in out
