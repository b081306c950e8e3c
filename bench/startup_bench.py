"""Start-up time of Verity's processes (not a test).

Times, each in a fresh subprocess and ``--repeat`` times (median and best wall time,
median CPU time):
``manage.py check`` (settings, apps, models and the whole URL configuration: what every
management command loads before it does anything), ``django.setup()`` alone, and
``python -m scoring --help``. Then lists the heavy libraries each of them imported (none
should be there) and the largest cumulative imports of ``manage.py check`` from
``python -X importtime``.

    .venv/bin/python bench/startup_bench.py
    .venv/bin/python bench/startup_bench.py --repeat 9 --root /tmp/verity-head   # other code

Prints the load average before and after: on a shared machine, compare runs made at
similar load only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
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


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root)
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    return env


def _time(args: list[str], root: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one fresh process: on a shared machine the
    CPU time moves much less with the load than the wall time."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=root,
        env=_env(root),
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
        env=_env(root),
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout whose code is timed")
    ap.add_argument("--top", type=int, default=12, help="largest imports to list")
    args = ap.parse_args()
    root = args.root.resolve()
    print(f"code: {root}   load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'process':<28}{'median s':>10}{'best s':>9}{'CPU s':>8}  heavy libraries imported")
    for label, probe in PROBES.items():
        _time(probe, root)  # warm the file cache
        times = [_time(probe, root) for _ in range(args.repeat)]
        wall = [t[0] for t in times]
        cpu = statistics.median(t[1] for t in times)
        heavy = heavy_loaded(probe, root)
        print(f"{label:<28}{statistics.median(wall):>10.3f}{min(wall):>9.3f}{cpu:>8.3f}  {heavy}")
    print("\nlargest top-level imports of manage.py check (cumulative, one run):")
    for cumulative, name in importtime(root, args.top):
        print(f"  {cumulative / 1e6:6.3f} s  {name}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
