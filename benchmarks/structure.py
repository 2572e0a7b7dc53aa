"""Issue 61's structural counts of the package, each against its goal: how many forms one
result takes, where a metric or an executor is named, how much English lives in the judge.

    python benchmarks/structure.py            # the table, and the package's line count

Pure reading of the source (``ast``): nothing is imported or run.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_tvmperf"
#: where the executors are declared (the one place their names may be compared)
EXECUTOR_TABLE = {"builder/executors.py", "builder/executor_choice.py", "combos.py"}
EXECUTORS = ("prim", "vm-bytecode", "vm-compiled")
METRICS = ("alloc_bytes", "code_bytes", "peak_bytes")
#: the names of the functions that turn a value into JSON or back
CODEC_NAMES = {"to_json", "from_json", "as_json", "to_dict", "from_dict", "read", "write_json", "loads", "dumps"}


def modules() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(PACKAGE)): ast.parse(p.read_text(), str(p))
        for p in sorted(PACKAGE.rglob("*.py"))
        if "workloads" not in p.parts  # the bundled workloads are data, not the tool
    }


def dataclass_fields(tree: ast.Module) -> dict[str, set[str]]:
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            if names:
                out[node.name] = names
    return out


def strings(tree: ast.Module) -> list[str]:
    """Every string literal (f-strings by their literal parts), docstrings left out."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            out.append(node.value)
    return out


def names_in_code(tree: ast.Module) -> set[str]:
    """The words code uses: identifiers, attributes, keywords and the words of its string literals
    (not docstrings or comments: a module that only explains a metric does not handle it)."""
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            words.add(node.arg)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            words.add(node.target.id)
    for text in strings(tree):
        words.update(re.findall(r"[a-z_]+", text))
    return words


def main() -> None:
    trees = modules()
    classes = {f"{m}:{c}": f for m, t in trees.items() for c, f in dataclass_fields(t).items()}
    shared = [
        (a, b, len(classes[a] & classes[b]))
        for a, b in itertools.combinations(sorted(classes), 2)
        if len(classes[a] & classes[b]) >= 8
    ]
    named = {metric: sorted(m for m, t in trees.items() if metric in names_in_code(t)) for metric in METRICS}
    literal = re.compile(
        r"""(==|!=)\s*["'](%s)["']|["'](%s)["']\s*(==|!=)""" % ("|".join(EXECUTORS), "|".join(EXECUTORS))
    )
    comparisons = [
        (m, line.strip())
        for m, t in trees.items()
        if m not in EXECUTOR_TABLE
        for line in (PACKAGE / m).read_text().splitlines()
        if literal.search(line)
    ]
    phrases = [s for m, t in trees.items() if m.startswith("judge/") for s in strings(t) if len(s.split()) >= 4]
    codecs = [
        f"{m}:{n.name}"
        for m, t in trees.items()
        for n in ast.walk(t)
        if isinstance(n, ast.FunctionDef) and n.name in CODEC_NAMES
    ]
    lines = {m: len((PACKAGE / m).read_text().splitlines()) for m in trees}
    long_modules = sorted(((n, m) for m, n in lines.items() if n > 400 and m != "config/options.py"), reverse=True)
    total = sum(len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py"))

    print("| count | now | goal |")
    print("|---|---|---|")
    print(f"| class pairs sharing 8 or more field names | {len(shared)} | 0 |")
    for metric in METRICS:
        print(f"| product modules naming `{metric}` | {len(named[metric])} | at most 4 |")
    print(f"| executor-name comparisons with a literal outside the executor table | {len(comparisons)} | at most 5 |")
    print(f"| phrases of four or more words in judge/ | {len(phrases)} | at most 15 |")
    print(f"| codec functions | {len(codecs)} | at most 12 |")
    print(f"| modules over 400 lines (but the option table) | {len(long_modules)} | 0 |")
    print(f"\npackage: {total} lines in {len(list(PACKAGE.rglob('*.py')))} modules")
    print("\nclass pairs sharing 8+ fields: " + "; ".join(f"{a} ~ {b} ({n})" for a, b, n in shared))
    print("modules over 400 lines: " + ", ".join(f"{m} {n}" for n, m in long_modules))
    print("executor comparisons: " + "; ".join(f"{m}: {line[:60]}" for m, line in comparisons))


if __name__ == "__main__":
    main()
