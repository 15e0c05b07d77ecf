"""The import graph of the product packages keeps the shape docs/architecture.md gives.

Every import statement counts: at module level, inside functions and under ``if TYPE_CHECKING:``. The
rules: no module imports itself back through others (no cycle between modules); inside every folder, the
folder's direct parts (its modules and subfolders, each taken whole) import each other without a cycle;
a package imports only packages of lower layers, in the order of the layer table in docs/architecture.md
(packages of one layer do not import each other), and none that its row says it never imports.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Container, Iterator
from pathlib import Path

import networkx as nx
import pytest

REPO = Path(__file__).resolve().parents[2]
ARCHITECTURE = REPO / "docs" / "architecture.md"
LAYER_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`([a-z_]+)`\s*\|[^|]*\|([^|]*)\|")


def layer_table() -> dict[str, tuple[int, set[str]]]:
    """``{package: (layer, packages it never imports)}`` from the table of docs/architecture.md
    (``| 3 | `placement` | what it owns | `syncer` |``)."""
    found: dict[str, tuple[int, set[str]]] = {}
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        match = LAYER_ROW.match(line)
        if match:
            found[match.group(2)] = (int(match.group(1)), set(re.findall(r"`([a-z_]+)`", match.group(3))))
    return found


TABLE = layer_table()
PACKAGES = sorted(TABLE)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def product_modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in (REPO / package).rglob("*.py")}


def imported_modules(module: str, path: Path, modules: Container[str]) -> Iterator[str]:
    """The modules an import statement of the module takes names from: ``from a import b`` takes ``a.b``
    when that is a module (a package's ``__init__`` is then only the way in), else ``a``."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[:len(package) - node.level + 1], *([base] if base else [])])
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base


def import_graph() -> nx.DiGraph:
    modules = product_modules()
    graph = nx.DiGraph()
    for module, path in modules.items():
        graph.add_node(module)
        for name in imported_modules(module, path, modules):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                graph.add_edge(module, name)
    return graph


GRAPH = import_graph()


def describe(graph: nx.DiGraph, members: set[str]) -> str:
    return "; ".join(f"{a} -> {b}" for a, b in sorted(graph.subgraph(members).edges))


def test_the_architecture_doc_names_every_product_package() -> None:
    assert {"spaces", "inventory", "placement", "sync", "syncer", "hub", "sim", "spacehub", "ui"} <= set(PACKAGES)
    on_disk = {p.parent.name for p in REPO.glob("*/__init__.py")} - {"tests"}
    assert on_disk <= set(PACKAGES), f"packages missing from the layer table: {sorted(on_disk - set(PACKAGES))}"


def test_no_module_imports_itself_back() -> None:
    cycles = [members for members in nx.strongly_connected_components(GRAPH) if len(members) > 1]
    assert not cycles, "import cycles: " + " | ".join(describe(GRAPH, c) for c in cycles)


def folder_parts(graph: nx.DiGraph) -> dict[str, nx.DiGraph]:
    """For every folder, the graph between its direct parts (a module, or a subfolder taken whole)."""
    folders: dict[str, nx.DiGraph] = {}
    for a, b in graph.edges:
        a_parts, b_parts = a.split("."), b.split(".")
        common = 0
        while common < min(len(a_parts), len(b_parts)) and a_parts[common] == b_parts[common]:
            common += 1
        if common == len(a_parts) or common == len(b_parts):
            continue  # a package and its own module: the folder's face, not two parts of one folder
        folder = ".".join(a_parts[:common]) or "<repo>"
        parts = folders.setdefault(folder, nx.DiGraph())
        parts.add_edge(a_parts[common], b_parts[common])
    return folders


@pytest.mark.parametrize("folder", sorted(folder_parts(GRAPH)))
def test_the_parts_of_each_folder_import_each_other_one_way(folder: str) -> None:
    parts = folder_parts(GRAPH)[folder]
    cycles = [members for members in nx.strongly_connected_components(parts) if len(members) > 1]
    assert not cycles, f"{folder}: parts in a circle: " + " | ".join(describe(parts, c) for c in cycles)


def package_imports() -> list[tuple[str, str, str, str]]:
    """(importing package, imported package, module, imported module) for imports across packages."""
    return sorted((a.split(".")[0], b.split(".")[0], a, b) for a, b in GRAPH.edges
                  if a.split(".")[0] != b.split(".")[0])


def test_packages_import_only_lower_layers() -> None:
    upward = [f"{a} -> {b}" for pa, pb, a, b in package_imports() if TABLE[pa][0] <= TABLE[pb][0]]
    assert not upward, "imports that do not go down a layer: " + "; ".join(upward)


def test_no_package_imports_what_its_row_forbids() -> None:
    forbidden = [f"{a} -> {b}" for pa, pb, a, b in package_imports() if pb in TABLE[pa][1]]
    assert not forbidden, "imports the layer table forbids: " + "; ".join(forbidden)


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_says_what_it_owns_and_what_it_must_never_import(package: str) -> None:
    doc = ast.get_docstring(ast.parse((REPO / package / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert doc, f"{package}/__init__.py has no docstring"
    assert "never" in doc, f"{package}/__init__.py does not say what it must never import"


# Modules outside the API server that still read the log store behind Objects: the Kubernetes client core
# rewrite (issue 27, item 2) moves spaces/providers onto Objects' reads. An entry that no longer reaches the
# store fails below, so the list only shrinks.
REACHES_THE_STORE_FOR_NOW = {"spaces.providers.kubespaces"}


def reaches_objects_store(path: Path) -> bool:
    """Whether the module reads ``<...>objects.store``: the log store behind ``apiserver.service.Objects``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr == "store":
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id == "objects") or \
                    (isinstance(owner, ast.Attribute) and owner.attr == "objects"):
                return True
    return False


def test_only_the_api_server_reaches_the_store_behind_objects() -> None:
    reaching = {module for module, path in product_modules().items()
                if module.split(".")[0] != "apiserver" and reaches_objects_store(path)}
    assert reaching - REACHES_THE_STORE_FOR_NOW == set(), \
        "read through Objects (find, find_row, rows_in, ...), not its store: " + ", ".join(sorted(reaching))
    assert reaching >= REACHES_THE_STORE_FOR_NOW, \
        f"no longer reach the store, drop from the list: {sorted(REACHES_THE_STORE_FOR_NOW - reaching)}"


def test_the_store_check_sees_each_way_of_reaching_it(tmp_path: Path) -> None:
    for reach in ("self.objects.store.get(key)", "objects.store.list('s', None, None)",
                  "self.ctx.objects.store"):
        module = tmp_path / "reach.py"
        module.write_text(f"def f(self, objects):\n    return {reach}\n", encoding="utf-8")
        assert reaches_objects_store(module), reach
    module.write_text("def f(self, runtime):\n    return self.objects.find_row(runtime.store)\n", encoding="utf-8")
    assert not reaches_objects_store(module)
