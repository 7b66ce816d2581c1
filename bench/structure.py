"""Figures for the shape of the code: the largest module and function, the import cycles
between modules, and what importing the composer costs.

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


def imported_modules(tree: ast.Module, name: str, is_package: bool, known: set[str]) -> set[str]:
    """Modules of the package this module imports at load time (not inside functions,
    not under `if TYPE_CHECKING`)."""
    found: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]
    for node in tree.body:
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
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
    graph = {
        name: imported_modules(tree, name, names[name].name == "__init__.py", set(names))
        for name, tree in trees.items()
    }
    top_level = [path for path in root.glob("*.py") if path.name != "__init__.py"]
    print(f"modules: {len(paths)} ({len(top_level)} at the top level)")
    print(f"largest module: {largest} ({lines[largest]} lines)")
    name, fn = longest
    print(f"longest function: {name}.{fn.name} ({(fn.end_lineno or 0) - fn.lineno + 1} lines)")
    found = cycles(graph)
    print(f"import cycles: {len(found)}")
    for component in found:
        print("  " + " <-> ".join(component))
    for module in ("digest.compose.digest", "digest.pipeline", "digest.cli"):
        seconds, loaded = import_time(module)
        print(f"import {module}: {seconds:.3f} s (openai loaded: {loaded})")


if __name__ == "__main__":
    main()
