"""The shape of the code base: no import cycle, no oversized module, planner/ and estimator/ stay pure,
hops_slurm/core/ sits below both backends, hops_slurm/tools/ apart from the daemon, one file name per meaning.

Read with the standard library's ``ast`` (no import runs): every ``import`` statement of every module
of hops_slurm/, planner/, estimator/ and profiler/ counts, at module level, under ``if TYPE_CHECKING:``
and inside functions alike. A lazy import hides a cycle from the interpreter, not from the design: two
modules that need each other are one concern split in two, or a type that wants its own module.
Importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``; those implicit edges to the parent
packages are not counted (a package that imports its own submodules is the usual layout), an explicit
``from a.b import x`` is.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hops_slurm", "planner", "estimator", "profiler")
PURE = ("planner", "estimator")
MAX_LINES = 600


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool


def modules(root: Path, packages: tuple[str, ...]) -> dict[str, Module]:
    found: dict[str, Module] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


def imported_names(module: Module) -> Iterator[tuple[int, str]]:
    """(line, dotted name) for every name an import statement of ``module`` may load, anywhere in it."""
    tree = ast.parse(module.path.read_text(encoding="utf-8"), str(module.path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join([*here, base] if base else here)
            for alias in node.names:  # a submodule, else a name inside ``base`` (resolved in import_graph)
                yield node.lineno, f"{base}.{alias.name}" if base else alias.name


def import_graph(found: dict[str, Module]) -> dict[str, dict[str, int]]:
    """module -> {module of ours it imports: the first line doing so}; each import resolves to the most
    specific module of ours it names."""
    graph: dict[str, dict[str, int]] = {name: {} for name in found}
    for name, module in found.items():
        for line, target in imported_names(module):
            while target and target not in found:
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].setdefault(target, line)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def describe(component: list[str], graph: dict[str, dict[str, int]]) -> str:
    members = set(component)
    edges = [f"{a} -> {b} (line {graph[a][b]})" for a in component for b in sorted(graph[a]) if b in members]
    return "; ".join(edges)


def test_no_import_cycle() -> None:
    graph = import_graph(modules(ROOT, PACKAGES))
    found = cycles(graph)
    assert found == [], "import cycles:\n" + "\n".join(describe(c, graph) for c in found)


def test_no_module_over_600_lines() -> None:
    long = {str(m.path.relative_to(ROOT)): n for m in modules(ROOT, PACKAGES).values()
            if (n := len(m.path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"modules over {MAX_LINES} lines (split them by concern): {long}"


@pytest.mark.parametrize("package", PURE)
def test_pure_packages_import_nothing_from_hops_slurm(package: str) -> None:
    found = modules(ROOT, PACKAGES)
    bad = [f"{m.path.relative_to(ROOT)}:{line} imports {target}"
           for m in found.values() if m.name.split(".")[0] == package
           for line, target in imported_names(m) if target.split(".")[0] == "hops_slurm"]
    assert bad == [], f"{package}/ must stay pure (docs/design.md, 'Principles'):\n" + "\n".join(bad)


def _imports_into(package: str, forbidden: tuple[str, ...]) -> list[str]:
    """``file:line imports target`` for every import inside ``package`` of a module under ``forbidden``."""
    found = modules(ROOT, PACKAGES)
    inside = package.split(".")
    return [f"{m.path.relative_to(ROOT)}:{line} imports {target}"
            for m in found.values() if m.name.split(".")[: len(inside)] == inside
            for line, target in imported_names(m)
            if any(target == f or target.startswith(f + ".") for f in forbidden)]


def test_core_imports_neither_backend() -> None:
    """hops_slurm/core/ is the round code both backends share: it sits below engine/ and sim/ (and
    everything else of hops_slurm/ that has a package of its own), never above them."""
    bad = _imports_into("hops_slurm.core", ("hops_slurm.engine", "hops_slurm.sim", "hops_slurm.slurm",
                                            "hops_slurm.tools", "hops_slurm.cli", "hops_slurm.report",
                                            "hops_slurm.whatif"))
    assert bad == [], "hops_slurm/core/ must not import from the backends or the tools:\n" + "\n".join(bad)


def test_nothing_but_the_cli_imports_the_tools() -> None:
    """hops_slurm/tools/ (benchmarks, demo, minicluster, latency measurement) sits beside the daemon,
    never inside it: the daemon's modules (engine/, slurm/, core/, the top-level modules), the simulator,
    report and what-if, and planner/, estimator/, profiler/ import nothing from it; the CLI runs it."""
    found = modules(ROOT, PACKAGES)
    bad = [f"{m.path.relative_to(ROOT)}:{line} imports {target}"
           for m in found.values() if m.name.split(".")[:2] not in (["hops_slurm", "tools"], ["hops_slurm", "cli"])
           for line, target in imported_names(m)
           if target == "hops_slurm.tools" or target.startswith("hops_slurm.tools.")]
    assert bad == [], "only hops_slurm/cli/ and hops_slurm/tools/ itself may import hops_slurm.tools:\n" + "\n".join(bad)


def test_one_file_name_one_meaning() -> None:
    """No two modules of hops_slurm/ share a file name (``__init__.py`` and ``__main__.py`` aside): a name
    says what the file holds (``engine/live_backend.py`` beside ``sim/sim_backend.py``), so a search by file
    name or a traceback line finds one file."""
    by_name: dict[str, list[str]] = {}
    for path in sorted((ROOT / "hops_slurm").rglob("*.py")):
        if path.name not in ("__init__.py", "__main__.py"):
            by_name.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert shared == {}, f"file names used by more than one module (rename by what each holds): {shared}"


def test_the_checks_see_cycles_behind_type_checking_and_lazy_imports(tmp_path: Path) -> None:
    """The checker itself: a cycle through a TYPE_CHECKING import and one through a function-level
    import are both found; a package importing its submodules, and relative imports, are not cycles."""
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    files = {
        "pkg/__init__.py": "from pkg import a\n",
        "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n",
        "pkg/b.py": "from pkg.a import x\n",
        "pkg/sub/__init__.py": "from .c import C\n",
        "pkg/sub/c.py": "def f():\n    from ..sub import d\n",
        "pkg/sub/d.py": "import pkg.sub.c\n",
        "pkg/e.py": "from . import a\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    graph = import_graph(modules(tmp_path, ("pkg",)))
    assert graph["pkg.e"] == {"pkg.a": 1}
    assert cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.sub.c", "pkg.sub.d"]]
