"""The shape of the house, checked on the source: nothing below the facade imports it, and the
package's import graph has no loops (imports inside functions and under TYPE_CHECKING count)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ragstream"
BELOW_THE_FACADE = ("pipeline", "answer", "retrieval", "store", "providers", "agents", "documents", "writes", "sync",
                    "ingestion", "collection_service", "feedback", "migration")
FACADE = "ragstream.api"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The ragstream modules ``path`` imports (``from a import b`` is ``a.b`` when that is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in known else base)
    return {module for module in found if module in known and module != "ragstream"}


def _with_packages(name: str, imports: set[str], known: set[str]) -> set[str]:
    """``imports`` plus the packages whose ``__init__`` importing them runs first: importing
    ``a.b.c`` runs ``a.b`` unless the importer already sits inside ``a.b``."""
    inside = {".".join(name.split(".")[:end]) for end in range(1, name.count(".") + 2)}
    found = set(imports)
    for module in imports:
        parts = module.split(".")
        found.update(package for package in (".".join(parts[:end]) for end in range(2, len(parts)))
                     if package in known and package not in inside)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _with_packages(name, _imports(path, name, known), known) - {name}
            for name, path in modules.items()}


def test_nothing_below_the_facade_imports_it():
    offenders = sorted(name for name, imports in _graph().items()
                       if name.split(".")[1:2] and name.split(".")[1] in BELOW_THE_FACADE and FACADE in imports)
    assert offenders == []


SHELLS = ("server", "cli", "mcp_server")
SHELL_MAY_IMPORT = ("ragstream.api", "ragstream.models", "ragstream.errors", "ragstream.config")
"""Besides these (and ``ragstream.api_*``, the facade's other files, and ``ragstream.config.*``), a shell imports
only shells: its own modules, or a sibling shell it starts or mounts (``ragstream serve`` runs the server,
``ragstream mcp`` the MCP server; the server mounts MCP at /mcp). The CLI also talks to a running server."""
CLIENT_OF_A_RUNNING_SERVER = "ragstream.remote"


def _shell_may_import(shell: str, module: str) -> bool:
    if module in SHELL_MAY_IMPORT or module.startswith(("ragstream.api_", "ragstream.config.")):
        return True
    if shell == "cli" and module == CLIENT_OF_A_RUNNING_SERVER:
        return True
    return _package(module) in SHELLS


def test_the_shells_import_only_the_facade_its_types_errors_and_config():
    """Issue 45: the server, the CLI and MCP are thin: whatever they need from below the facade (the write path,
    the answer's types, the pipeline's stages, logging) comes through ``ragstream.api`` or an ``api_*`` file."""
    offenders = {name: sorted(i for i in imports if not _shell_may_import(_package(name), i))
                 for name, imports in _graph().items() if name.count(".") and _package(name) in SHELLS}
    assert {name: imports for name, imports in offenders.items() if imports} == {}


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan): each is a loop of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return loops


def _package(module: str) -> str:
    """The top-level part of ragstream a module belongs to: ``ragstream.answer.service`` -> ``answer``;
    a module at the root is its own (``ragstream.models`` -> ``models``)."""
    return module.split(".")[1]


def test_the_import_graph_has_no_loops():
    assert _loops(_graph()) == []


def test_the_packages_import_each_other_without_a_loop():
    """Layers, not only modules: no package imports a package that imports it back (through any path)."""
    packages: dict[str, set[str]] = {}
    for name, imports in _graph().items():
        if name == "ragstream":
            continue
        packages.setdefault(_package(name), set()).update(_package(i) for i in imports if i != "ragstream")
    graph = {package: targets - {package} for package, targets in packages.items()}
    for targets in list(graph.values()):
        for target in targets:
            graph.setdefault(target, set())
    assert _loops(graph) == []


MAX_MODULE_LINES = 500
MAX_PUBLIC_METHODS = 20
"""The house's size limits (docs/architecture.md): a module does one job, a class below the facade
serves one role."""


def test_no_module_exceeds_the_line_limit():
    long = {name: lines for name, path in _modules().items()
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def _public_methods(node: ast.ClassDef) -> list[str]:
    return [item.name for item in node.body
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and not item.name.startswith("_")]


def test_no_class_below_the_facade_has_more_than_twenty_public_methods():
    wide = {}
    for name, path in _modules().items():
        if name == FACADE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and len(methods := _public_methods(node)) > MAX_PUBLIC_METHODS:
                wide[f"{name}.{node.name}"] = len(methods)
    assert wide == {}


def _reads_extras(tree: ast.AST) -> list[int]:
    """Lines that read ``<x>.extras`` (anything but the target of ``x.extras[k] = ...``, ``del`` or ``x.extras = ...``)."""
    written = {id(node.value) for node in ast.walk(tree)
               if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del)}
    written |= {id(node) for node in ast.walk(tree) if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)}
    return sorted(node.lineno for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and node.attr == "extras" and id(node) not in written)


def test_no_stage_hands_data_to_another_through_extras():
    """``SuperPrompt.extras`` holds per-stage logs for display: only written, never read, in the package
    (what a later stage, the answer or the UI needs is a typed field)."""
    readers = {name: lines for name, path in _modules().items()
               if (lines := _reads_extras(ast.parse(path.read_text(encoding="utf-8"))))}
    assert readers == {}


def test_the_pipeline_page_reads_no_extras():
    script = (PACKAGE / "server" / "static" / "pipeline.js").read_text(encoding="utf-8")
    assert ".extras" not in script
