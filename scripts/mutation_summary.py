"""Summarise mutmut's results per module (called by scripts/mutate.sh).

    python scripts/mutation_summary.py var/mutate docs/MUTATION.md   # the table
    python scripts/mutation_summary.py --survivors var/mutate/engine # names, one a line

Reads every ``mutants/**/*.py.meta`` under the group folders, counts each mutant's outcome
per source module, and takes the survivors that ``docs/MUTATION.md`` lists as equivalent
(a line starting ``- `MUTANT_NAME` `` followed by the reason) out of the survivors. Prints
a Markdown table (killed includes timeouts) and the survivors that are not listed, so that
they get a test or a reason.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

# mutmut's exit codes (mutmut/stats.py): 1 and 3 killed, 0 survived, timeouts, no tests.
KILLED = {1, 3, 36, 24, -24, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}
COLUMNS = ("killed", "survived", "equivalent", "no tests", "not run")


def listed_equivalents(doc: Path) -> set[str]:
    if not doc.exists():
        return set()
    text = doc.read_text(encoding="utf-8")
    return set(re.findall(r"^- `([\w.ǁ]+__mutmut_\d+)`", text, re.M))


def outcomes(group_dir: Path) -> Iterator[tuple[str, str, int | None]]:
    """(module path, mutant name, exit code) for every mutant of one group."""
    root = group_dir / "mutants"
    for meta in sorted(root.glob("**/*.py.meta")):
        module = str(meta.relative_to(root))[: -len(".meta")]
        data = json.loads(meta.read_text(encoding="utf-8"))
        for name, code in sorted(data.get("exit_code_by_key", {}).items()):
            yield module, name, code


def survivors(group_dir: Path) -> list[str]:
    return [n for _, n, code in outcomes(group_dir) if code in SURVIVED | NO_TESTS]


def table(root: Path, doc: Path) -> str:
    equivalent = listed_equivalents(doc)
    rows: dict[str, Counter[str]] = {}
    unexplained: list[str] = []
    for group_dir in sorted(p for p in root.iterdir() if (p / "mutants").is_dir()):
        for module, name, code in outcomes(group_dir):
            counts = rows.setdefault(module, Counter())
            if code in KILLED:
                counts["killed"] += 1
            elif code in SURVIVED and name in equivalent:
                counts["equivalent"] += 1
            elif code in SURVIVED:
                counts["survived"] += 1
                unexplained.append(name)
            elif code in NO_TESTS:
                counts["no tests"] += 1
                unexplained.append(f"{name} (no test reaches it)")
            else:
                counts["not run"] += 1
    lines = [
        "| module | " + " | ".join(COLUMNS) + " | killed / (all - equivalent - not run) |",
        "|---|" + "---:|" * (len(COLUMNS) + 1),
    ]
    totals: dict[str, Counter[str]] = {}
    for module, counts in sorted(rows.items()):
        if not sum(counts.values()):
            continue
        area = "scoring/engine/" if module.startswith("scoring/engine/") else "services"
        totals.setdefault(area, Counter()).update(counts)
        lines.append(_row(f"`{module}`", counts))
    for area, counts in totals.items():
        lines.append(_row(f"**{area} total**", counts))
    out = "\n".join(lines) + "\n"
    if unexplained:
        out += f"\n{len(unexplained)} survivors not listed as equivalent in {doc}:\n"
        out += "".join(f"  {name}\n" for name in unexplained)
    return out


def _row(label: str, counts: Counter[str]) -> str:
    tried = sum(counts[c] for c in COLUMNS if c not in ("equivalent", "not run"))
    score = f"{counts['killed'] / tried:.1%}" if tried else "—"
    return f"| {label} | " + " | ".join(str(counts[c]) for c in COLUMNS) + f" | {score} |"


if __name__ == "__main__":
    if sys.argv[1] == "--survivors":
        print("\n".join(survivors(Path(sys.argv[2]))))
    else:
        print(table(Path(sys.argv[1]), Path(sys.argv[2])), end="")
