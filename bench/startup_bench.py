"""Start-up time of Verity's processes (not a test).

First, side by side with a bare Django project (``django-admin startproject`` in a
temporary directory, run by the same interpreter and virtual environment): ``manage.py
check`` of each, alternately, ``--rounds`` times, each in a fresh process; median wall
time and median CPU time (user + system of the child, the primary figure on a loaded
machine) and Verity's ratio to the bare project (issue 29's goal: at most 1.5x). Both
without a bytecode cache for the projects' own modules and with one, as below.
``--bare-only`` stops there.

Then times, each in a fresh subprocess and ``--repeat`` times (median and best wall time,
median CPU time):
``manage.py check`` (settings, apps, models and the whole URL configuration: what every
management command loads before it does anything), ``django.setup()`` alone, and
``python -m scoring --help``. Then lists the heavy libraries each of them imported (none
should be there) and the largest cumulative imports of ``manage.py check`` from
``python -X importtime``.

    .venv/bin/python bench/startup_bench.py
    .venv/bin/python bench/startup_bench.py --bare-only --rounds 21    # the ratio only
    .venv/bin/python bench/startup_bench.py --repeat 9 --root /tmp/verity-head   # other code
    .venv/bin/python bench/startup_bench.py --before /tmp/verity-main            # a pair

``--before ROOT`` times another checkout too, alternating the two at every repetition so
that both see the same load. Each probe runs twice over (``--bytecode both``): without a
bytecode cache (``PYTHONDONTWRITEBYTECODE=1``, as this project's sessions run: every
process compiles the project's ~250 modules again) and with one (``PYTHONPYCACHEPREFIX``
a fresh temporary directory, filled by the warm-up run: what an installed or
``compileall``-ed checkout has). Prints the load average with each block: on a shared
machine, compare runs made at similar load only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "scipy", "pyarrow", "pandas", "sklearn", "krippendorff", "drf_spectacular.views")

SETUP = "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); "
PROBES = {
    "manage.py check": [
        "-c",
        "import sys; sys.argv = ['manage.py', 'check']; "
        "exec(compile(open('manage.py').read(), 'manage.py', 'exec'))",
    ],
    "django.setup()": ["-c", SETUP + "django.setup()"],
    "python -m scoring --help": ["-m", "scoring", "--help"],
}


CACHE_DIRS: dict[Path, str] = {}  # a bytecode cache per checkout


def _env(root: Path, cached: bool = False, settings: str = "config.settings") -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root)
    env["DJANGO_SETTINGS_MODULE"] = settings
    env.pop("PYTHONPYCACHEPREFIX", None)
    if cached:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = CACHE_DIRS.setdefault(
            root, tempfile.mkdtemp(prefix="verity-pyc-")
        )
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _time(
    args: list[str], root: Path, cached: bool = False, settings: str = "config.settings"
) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one fresh process: on a shared machine the
    CPU time moves much less with the load than the wall time."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=root,
        env=_env(root, cached, settings),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{args} failed in {root}")
    return wall, usage.ru_utime + usage.ru_stime


def heavy_loaded(args: list[str], root: Path) -> str:
    """Which of HEAVY the probe imported (run with an atexit hook that prints them)."""
    hook = (
        "import atexit, sys; atexit.register(lambda: print('HEAVY=' + ','.join(m for m in "
        f"{HEAVY!r} if m in sys.modules), file=sys.stderr)); "
    )
    if args[0] == "-c":
        cmd = ["-c", hook + args[1]]
    else:  # -m module ...: run it through runpy after installing the hook
        cmd = [
            "-c",
            hook + f"import runpy, sys; sys.argv = {args[1:]!r}; "
            f"runpy.run_module({args[1]!r}, run_name='__main__')",
        ]
    proc = subprocess.run(
        [sys.executable, *cmd], cwd=root, env=_env(root), capture_output=True, text=True
    )
    found = [line[6:] for line in proc.stderr.splitlines() if line.startswith("HEAVY=")]
    return (found[-1] if found else "?") or "none"


def importtime(root: Path, top: int) -> list[tuple[int, str]]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *PROBES["manage.py check"]],
        cwd=root,
        env=_env(root, cached=True),
        capture_output=True,
        text=True,
    )
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|")
        if not name.startswith("  "):  # top-level imports only (one leading space)
            rows.append((int(cumulative), name.strip()))
    return sorted(rows, reverse=True)[:top]


def bare_project() -> Path:
    """A fresh ``django-admin startproject bare`` in a temporary directory, made by this
    interpreter's Django: what "a bare Django project" means here."""
    folder = Path(tempfile.mkdtemp(prefix="verity-bare-"))
    subprocess.run(
        [sys.executable, "-m", "django", "startproject", "bare", str(folder)],
        check=True,
        env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
    )
    return folder


def versus_bare(root: Path, rounds: int, modes: list[bool]) -> None:
    """``manage.py check`` of Verity and of a bare project, alternately, ``rounds`` times."""
    bare = bare_project()
    try:
        _versus(bare, root, rounds, modes)
    finally:
        shutil.rmtree(bare, ignore_errors=True)


def _versus(bare: Path, root: Path, rounds: int, modes: list[bool]) -> None:
    check = ["manage.py", "check"]
    sides = {"bare": (bare, "bare.settings"), "verity": (root, "config.settings")}
    print(f"bare project: {bare} (Django startproject, {sys.executable})")
    print(
        f"\n{'manage.py check':<16}{'bytecode':>9}{'median wall s':>15}{'median CPU s':>14}"
        f"{'best CPU s':>12}  load"
    )
    for cached in modes:
        for where, settings in sides.values():
            _time(check, where, cached, settings)  # warm the caches (and fill the bytecode one)
        times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
        for _ in range(rounds):
            for side, (where, settings) in sides.items():
                times[side].append(_time(check, where, cached, settings))
        medians = {}
        for side in sides:
            wall = statistics.median(t[0] for t in times[side])
            cpu = [t[1] for t in times[side]]
            medians[side] = (wall, statistics.median(cpu))
            print(
                f"{side:<16}{'cached' if cached else 'none':>9}{wall:>15.3f}"
                f"{medians[side][1]:>14.3f}{min(cpu):>12.3f}  {os.getloadavg()[0]:4.1f}"
            )
        print(
            f"{'verity / bare':<16}{'cached' if cached else 'none':>9}"
            f"{medians['verity'][0] / medians['bare'][0]:>14.2f}x"
            f"{medians['verity'][1] / medians['bare'][1]:>13.2f}x"
            f"   ({rounds} rounds each)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout whose code is timed")
    ap.add_argument("--before", type=Path, help="another checkout, timed alternately")
    ap.add_argument("--bytecode", choices=("none", "cached", "both"), default="both")
    ap.add_argument("--top", type=int, default=12, help="largest imports to list")
    ap.add_argument("--rounds", type=int, default=11, help="rounds against the bare project")
    ap.add_argument("--bare-only", action="store_true", help="only the bare-project pair")
    args = ap.parse_args()
    roots = [args.root.resolve()]
    if args.before is not None:
        roots.insert(0, args.before.resolve())
    modes = {"none": [False], "cached": [True], "both": [False, True]}[args.bytecode]
    versus_bare(roots[-1], args.rounds, modes)
    if args.bare_only:
        return
    print()
    for n, root in enumerate(roots):
        print(f"code {'before' if n == 0 and len(roots) > 1 else 'after' if n else ''}: {root}")
    print(
        f"\n{'process':<26}{'bytecode':>9}{'code':>8}{'median s':>10}{'best s':>8}{'CPU s':>7}"
        "  load  heavy libraries imported"
    )
    for label, probe in PROBES.items():
        for cached in modes:
            for root in roots:
                _time(probe, root, cached)  # warm the file cache (and fill the bytecode cache)
            times: dict[Path, list[tuple[float, float]]] = {root: [] for root in roots}
            for _ in range(args.repeat):
                for root in roots:  # alternately, so that both see the same load
                    times[root].append(_time(probe, root, cached))
            for n, root in enumerate(roots):
                wall = [t[0] for t in times[root]]
                cpu = statistics.median(t[1] for t in times[root])
                code = ("before" if n == 0 else "after") if len(roots) > 1 else ""
                print(
                    f"{label:<26}{'cached' if cached else 'none':>9}{code:>8}"
                    f"{statistics.median(wall):>10.3f}{min(wall):>8.3f}{cpu:>7.3f}"
                    f"  {os.getloadavg()[0]:4.1f}  {heavy_loaded(probe, root)}"
                )
    print(
        f"\nlargest top-level imports of manage.py check in {roots[-1]} "
        "(cumulative, one run, with a bytecode cache):"
    )
    for cumulative, name in importtime(roots[-1], args.top):
        print(f"  {cumulative / 1e6:6.3f} s  {name}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
