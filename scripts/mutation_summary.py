"""Summarise mutmut's results per module (called by scripts/mutate.sh).

    python scripts/mutation_summary.py var/mutate docs/MUTATION.md   # the table
    python scripts/mutation_summary.py --survivors var/mutate/engine # to try (again), one a line
                                              # (leaving out those listed as equivalent)
    python scripts/mutation_summary.py --diffs var/mutate/engine     # each survivor's change
    python scripts/mutation_summary.py --markdown var/mutate         # docs/MUTATION.md lists

Reads every ``mutants/**/*.py.meta`` under the group folders, counts each mutant's outcome
per source module, and takes the survivors that ``docs/MUTATION.md`` lists as equivalent
(a line starting ``- `MUTANT_NAME` `` followed by the reason) out of the survivors. Prints
a Markdown table (killed includes timeouts) and the survivors that are not listed, so that
they get a test or a reason.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from mutation_equivalents import EQUIVALENT_RULES, NAMED_RULES, SITE_RULES

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


def survivors(group_dir: Path, *, with_untried: bool = False) -> list[str]:
    wanted = SURVIVED | NO_TESTS | ({None} if with_untried else set())
    return [n for _, n, code in outcomes(group_dir) if code in wanted]


def diffs(group_dir: Path) -> dict[str, list[str]]:
    """The changed lines of each surviving mutant: mutmut writes every mutant as a copy of
    its function (``x_NAME__mutmut_N`` beside ``x_NAME__mutmut_orig``) in mutants/."""
    wanted = set(survivors(group_dir))
    out: dict[str, list[str]] = {}
    for source in sorted((group_dir / "mutants").glob("**/*.py")):
        text = source.read_text(encoding="utf-8")
        if "__mutmut_orig" not in text:
            continue
        module = ".".join(source.relative_to(group_dir / "mutants").with_suffix("").parts)
        lines = text.splitlines()
        functions = {
            node.name: "\n".join(lines[node.lineno - 1 : node.end_lineno])
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name
        }
        for fname, body in functions.items():
            name = f"{module}.{fname}"
            if name not in wanted:
                continue
            orig = functions[fname.rsplit("__mutmut_", 1)[0] + "__mutmut_orig"]
            strip = lambda b: [line.strip() for line in b.splitlines()[1:]]  # noqa: E731
            out[name] = [
                line
                for line in difflib.unified_diff(strip(orig), strip(body), lineterm="", n=0)
                if line[:1] in "+-" and line[:3] not in ("+++", "---")
            ]
    return out


def classify(name: str, lines: list[str]) -> str | None:
    """The reason a change is equivalent, or None."""
    if name in NAMED_RULES:
        return NAMED_RULES[name]
    removed = [line[1:] for line in lines if line.startswith("-")]
    added = [line[1:] for line in lines if line.startswith("+")]
    if len(removed) != 1 or len(added) > 1:
        return None
    after_text = added[0] if added else ""
    for site, before, after, reason in SITE_RULES:
        site_matches = f".{site}__mutmut_" in name and re.search(before, removed[0])
        if site_matches and re.search(after, after_text):
            return reason
    if not added:
        return None
    for before_re, after_re, reason in EQUIVALENT_RULES:
        if before_re.search(removed[0]) and after_re.search(after_text):
            return reason
    return None


def markdown(root: Path) -> str:
    """The equivalent survivors grouped by reason, then the open ones with their change."""
    by_reason: dict[str, list[str]] = {}
    open_ones: list[tuple[str, list[str]]] = []
    for group_dir in sorted(p for p in root.iterdir() if (p / "mutants").is_dir()):
        for name, lines in diffs(group_dir).items():
            reason = classify(name, lines)
            if reason is None:
                open_ones.append((name, lines))
            else:
                by_reason.setdefault(reason, []).append(name)
    out = ["## Equivalent mutants", ""]
    for reason, names in by_reason.items():
        out += [f"Reason: {reason}.", ""] + [f"- `{n}`: equivalent (above)" for n in names] + [""]
    out += ["## Survivors not killed yet", ""]
    for name, lines in open_ones:
        change = " → ".join(line[1:].strip() for line in lines)[:160]
        out.append(f"* `{name}`: `{change}`")
    return "\n".join(out) + "\n"


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
        area = "scorer/verity_eval/" if module.startswith("scorer/verity_eval/") else "services"
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
        # The survivors listed as equivalent in docs/MUTATION.md are not tried again.
        known = listed_equivalents(Path("docs/MUTATION.md"))
        print(
            "\n".join(n for n in survivors(Path(sys.argv[2]), with_untried=True) if n not in known)
        )
    elif sys.argv[1] == "--markdown":
        print(markdown(Path(sys.argv[2])), end="")
    elif sys.argv[1] == "--diffs":
        for name, lines in diffs(Path(sys.argv[2])).items():
            print(name)
            print("".join(f"    {line}\n" for line in lines), end="")
    else:
        print(table(Path(sys.argv[1]), Path(sys.argv[2])), end="")
