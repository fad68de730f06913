"""The packages form layers that only look down, and no module imports itself back.

Read from the source with `ast`, so imports inside functions count (they hide cycles from a plain
`import`), and imports under `if TYPE_CHECKING:` count for the layers (a type is a dependency
too) but not for cycles (they never run). docs/architecture.md explains the order.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP_PACKAGES = ("kernel", "servers", "loadgen")

# Bottom to top: a unit may import from itself and from the units before it, never after.
LAYERS = (
    "kernel",  # StrictModel, units, redaction: shared by loadgen and servers
    "servers.models",  # the bundled tiny model and the scripts that rebuild it
    "servers.engines",  # the Engine interface, batching, decoders, tokenizer, the simulated engine
    "servers.http",  # the OpenAI-compatible HTTP front over an Engine, /metrics
    "servers",  # its own modules: the adapters and the built-in servers' main()s
    "loadgen.fmt",
    "loadgen.rundir",  # the run folder's layout and safe writes
    "loadgen.inputs",  # trace, conversation and dataset readers
    "loadgen.wire",  # the wire APIs: requests built, answers read
    "loadgen.collect",  # records and statistics
    "loadgen.evaluate",  # SLOs, knee, capacity, plans, drills: pure
    "loadgen.scenario",  # the scenario model and its validation
    "loadgen.features",  # the traffic features' slices: draws, request parts, record fields, statistics
    "loadgen.traffic",  # schedules, Locust users, the balancer
    "loadgen.grafana",  # the Grafana API client and dashboard push
    "loadgen.live",  # exporter, progress view, annotations, wiring
    "loadgen.distributed",  # master and workers
    "loadgen.report",  # report.json/md/html, junit.xml
    "loadgen.features.*.report",  # the slices' report sides (SLICE_REPORTS): above the report they fill
    "loadgen.compare",  # comparing runs
    "loadgen.run",  # one run, end to end
    "loadgen.environments",  # one scenario across environments
    "loadgen.reference",  # the generated docs and JSON Schemas
    "loadgen.cli",
    "loadgen",  # the package itself (its __init__)
)


# A slice's report side, `loadgen.features.<slice>.report` and its modules, is a layer of its
# own: it uses loadgen.report's models, charts and page, which import it by name only, and the
# rest of its slice (loadgen.features) lies below it, so it never imports it either.
SLICE_REPORTS = "loadgen.features.*.report"


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (a package's __init__ when a name is imported from it)
    line: int
    typing_only: bool


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for top in TOP_PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, typing_only)
            return
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            # `from pkg import sub` imports the module pkg.sub; `from pkg import name`, pkg itself.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for target in targets:
            if target.split(".")[0] in TOP_PACKAGES and target != module:
                found.append(Import(module, target, getattr(node, "lineno", 0), typing_only))
        for inner in ast.iter_child_nodes(node):
            visit(inner, typing_only)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def _unit(module: str) -> str:
    """The layer a module belongs to: a slice's report side's (SLICE_REPORTS), else the longest
    LAYERS entry it lies in."""
    parts = module.split(".")
    if parts[:2] == ["loadgen", "features"] and parts[3:4] == ["report"]:
        return SLICE_REPORTS
    matches = [layer for layer in LAYERS if module == layer or module.startswith(layer + ".")]
    assert matches, f"{module} is in no layer: add its package to LAYERS (and docs/architecture.md)"
    return max(matches, key=len)


@functools.cache
def _all_imports() -> list[Import]:
    modules = _modules()
    return [found for module, path in modules.items() for found in _imports(module, path, modules)]


def test_every_package_has_a_layer() -> None:
    packages = {
        _module_name(init.parent / "__init__.py") for init in (ROOT / "loadgen").glob("*/__init__.py")
    }
    modules = {_module_name(path) for path in (ROOT / "loadgen").glob("*.py")}
    placed = set(LAYERS)
    assert sorted((packages | modules) - placed - {"loadgen"}) == []


SERVERS_LAYERS = tuple(layer for layer in LAYERS if layer.split(".")[0] == "servers")


def test_every_servers_package_has_a_layer() -> None:
    """Each of servers/'s sub-packages is a layer of its own (a new one is not silently folded
    into `servers`), and every servers module lies in one of servers' layers: its top-level
    modules in `servers` itself, the top of the three."""
    packages = {_module_name(init) for init in (ROOT / "servers").glob("*/__init__.py")}
    assert len(packages) >= 3
    assert sorted(packages - set(SERVERS_LAYERS)) == []
    modules = [module for module in _modules() if module.split(".")[0] == "servers"]
    assert len(modules) > len(packages)
    assert sorted(module for module in modules if _unit(module) not in SERVERS_LAYERS) == []
    assert SERVERS_LAYERS[-1] == "servers"


def _upward(imports: list[Import]) -> list[str]:
    rank = {layer: index for index, layer in enumerate(LAYERS)}
    return [
        f"{found.source}:{found.line} imports {found.target}"
        for found in imports
        if rank[_unit(found.target)] > rank[_unit(found.source)]
    ]


def test_layers_only_look_down() -> None:
    assert _upward(_all_imports()) == []


def test_servers_layers_only_look_down() -> None:
    """Within servers/: models, then engines, then the HTTP front, then the adapters and servers."""
    inside = [
        found
        for found in _all_imports()
        if found.source.split(".")[0] == "servers" and found.target.split(".")[0] == "servers"
    ]
    across = {(_unit(found.source), _unit(found.target)) for found in inside}
    assert ("servers.http", "servers.engines") in across  # the check sees the sub-packages apart
    assert _upward(inside) == []


def test_servers_never_imports_loadgen_and_kernel_neither() -> None:
    """docs/architecture.md: `servers` never imports `loadgen`; `kernel` imports neither."""
    barred = {"kernel": {"servers", "loadgen"}, "servers": {"loadgen"}}
    crossing = [
        f"{found.source}:{found.line} imports {found.target}"
        for found in _all_imports()
        if found.target.split(".")[0] in barred.get(found.source.split(".")[0], set())
    ]
    assert crossing == []


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for found in _all_imports():
        if not found.typing_only:
            graph.setdefault(found.source, set()).add(found.target)
    cycles = _cycles(graph)
    assert cycles == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_checks_see_what_they_claim() -> None:
    """The graph reader finds a function-level import and a TYPE_CHECKING one, and the cycle
    finder finds a cycle: without this, an empty list above could mean a blind reader."""
    imports = _all_imports()
    assert any(found.typing_only for found in imports)
    lazy = [found for found in imports if found.source == "loadgen.environments.write"]
    assert any(found.target == "loadgen.environments.html" for found in lazy)
    lazy = [found for found in imports if found.source == "servers.simulated"]
    assert any(found.target == "servers.engines.simulated_engine" for found in lazy)
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_slice_report_side_is_a_layer_above_the_report() -> None:
    """`loadgen.features.<slice>.report` and its modules sit above loadgen.report (they import
    it); the rest of their slice stays in loadgen.features, below it."""
    assert _unit("loadgen.features.images.report") == SLICE_REPORTS
    assert _unit("loadgen.features.images.report.html") == SLICE_REPORTS
    assert _unit("loadgen.features.images.stats") == "loadgen.features"
    assert _unit("loadgen.features.report_like") == "loadgen.features"
    sides = [found for found in _all_imports() if _unit(found.source) == SLICE_REPORTS]
    assert any(_unit(found.target) == "loadgen.report" for found in sides)


def test_the_architecture_page_lists_the_layers_in_order() -> None:
    """docs/architecture.md's table runs bottom to top in the same order as LAYERS."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = [line.split("`")[1] for line in text.splitlines() if line.startswith("| `")]
    in_layers = [name for name in named if name in LAYERS]
    assert in_layers == [layer for layer in LAYERS if layer in named]
    assert set(LAYERS) - set(named) <= {"loadgen"}
