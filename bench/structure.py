"""Figures for the shape of the code: the modules at the top level, the largest module and
function, the import cycles between modules (at load time, and counting the imports made
inside functions or for type checking too: a cycle put off is still a cycle), the climbs
back up (a module importing the shell that runs it: cli, pipeline, jobs, daemon), and what
importing the composer costs.

    python bench/structure.py [SRC_DIR]     (default: src/digest)
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


SHELL = frozenset({"digest.cli", "digest.pipeline", "digest.jobs", "digest.daemon"})
ENTRY_POINTS = frozenset({"digest.__main__"})  # it runs the shell


def in_shell(module: str) -> bool:
    """The shell's modules, and those of a shell package (digest.cli.run)."""
    return any(module == shell or module.startswith(shell + ".") for shell in SHELL)


def imported_modules(
    tree: ast.Module, name: str, is_package: bool, known: set[str], *, deferred: bool = False
) -> set[str]:
    """Modules of the package this module imports at load time (not inside functions,
    not under `if TYPE_CHECKING`), or with `deferred` wherever it imports them."""
    found: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree) if deferred else tree.body:
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names]
            # `from pkg import sub` imports the submodule; only names from pkg itself count
            # as importing pkg (as `import pkg.sub` does not: every submodule loads its parent)
            targets = names + ([base] if not set(names) <= known else [])
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in graph:
        if node not in index:
            visit(node)
    return result


def import_time(module: str) -> tuple[float, bool]:
    """Seconds to import `module` in a fresh interpreter (best of 3), and whether openai loaded."""
    code = (
        "import time, sys; t = time.perf_counter(); import " + module + "; "
        "print(time.perf_counter() - t, 'openai' in sys.modules)"
    )
    best, openai_loaded = float("inf"), False
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        seconds, loaded = out.stdout.split()
        best = min(best, float(seconds))
        openai_loaded = loaded == "True"
    return best, openai_loaded


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "src/digest").resolve()
    paths = sorted(root.rglob("*.py"))
    names = {module_name(path, root): path for path in paths}
    trees = {name: ast.parse(path.read_text(), str(path)) for name, path in names.items()}
    lines = {name: len(path.read_text().splitlines()) for name, path in names.items()}
    largest = max(lines, key=lines.__getitem__)
    longest = max(
        ((name, fn) for name, tree in trees.items() for fn in functions(tree)),
        key=lambda pair: (pair[1].end_lineno or 0) - pair[1].lineno,
    )
    graphs = {
        deferred: {
            name: imported_modules(
                tree, name, names[name].name == "__init__.py", set(names), deferred=deferred
            )
            for name, tree in trees.items()
        }
        for deferred in (False, True)
    }
    top_level = sorted(path.stem for path in root.glob("*.py") if path.name != "__init__.py")
    print(f"modules: {len(paths)} ({len(top_level)} at the top level: {', '.join(top_level)})")
    print(f"largest module: {largest} ({lines[largest]} lines)")
    name, fn = longest
    print(f"longest function: {name}.{fn.name} ({(fn.end_lineno or 0) - fn.lineno + 1} lines)")
    for deferred, label in ((False, "at load time"), (True, "counting deferred imports")):
        found = cycles(graphs[deferred])
        print(f"import cycles {label}: {len(found)}")
        for component in found:
            print("  " + " <-> ".join(component))
    climbs = sorted(
        (name, target)
        for name, targets in graphs[True].items()
        for target in targets
        if in_shell(target) and not in_shell(name) and name not in ENTRY_POINTS
    )
    print(f"climbs back up (a module importing the shell that runs it): {len(climbs)}")
    for name, target in climbs:
        print(f"  {name} -> {target}")
    for module in ("digest.compose.digest", "digest.pipeline", "digest.cli"):
        seconds, loaded = import_time(module)
        print(f"import {module}: {seconds:.3f} s (openai loaded: {loaded})")


if __name__ == "__main__":
    main()
