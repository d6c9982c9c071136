"""No import circle among the project's modules, whichever package they are in.

Every ``import`` counts: at module level, under ``TYPE_CHECKING`` and inside functions
(a deferred import only hides a circle until the day someone moves it up). ``from X
import Y`` is an edge to the module ``X.Y`` when that is a module, else to ``X``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(ROOT.glob("packages/*/src"))


def _modules() -> dict[str, Path]:
    found = {}
    for src in SOURCES:
        for path in src.rglob("*.py"):
            parts = list(path.relative_to(src).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                child = f"{target}.{alias.name}"
                if child in modules:
                    yield child
                elif target in modules:
                    yield target


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_project_has_modules_to_check() -> None:
    modules = _modules()
    assert {"seqera_core.session", "seqera_sidecar", "cwltool_seqera"} <= set(modules)


def test_no_import_cycle_among_the_projects_modules() -> None:
    modules = _modules()
    graph = {
        name: {t for t in _imports(name, path, modules) if t != name}
        for name, path in modules.items()
    }
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_a_cycle_is_found_when_there_is_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
