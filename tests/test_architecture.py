"""The shape to keep: packages import one way, no two modules import each other, modules stay small.

Every module belongs to a *room*: its package (``anvil.serve.mcp`` for ``anvil/serve/mcp/hotpath.py``),
or, for the top-level modules, the core (``anvil._dataclass``, ``anvil._types``, ``codes``, ``diagnostics``,
``errors``, the package itself), the Python client (``anvil.client``) or the entry point (``anvil.__main__``). A room
may import the core, itself, and the rooms (or single modules) :data:`ALLOWED` lists for it.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src" / "anvil"
CORE = {"anvil", "anvil._dataclass", "anvil._types", "anvil.codes", "anvil.diagnostics", "anvil.errors"}
MAX_MODULE_LINES = 700

# room -> the rooms (or single modules) it may import, besides itself and the core
ALLOWED: dict[str, set[str]] = {
    "anvil.air": set(),
    "anvil.load": set(),
    "anvil.compiler": {"anvil.air", "anvil.load", "anvil.compiler.manifest"},
    # applying a manifest re-runs the operation classifier on a declared side effect
    "anvil.compiler.manifest": {"anvil.air", "anvil.load", "anvil.compiler.classify"},
    "anvil.bundle": {"anvil.air", "anvil.compiler", "anvil.load"},
    "anvil.ledger": {"anvil.air"},
    "anvil.runtime": {"anvil.air", "anvil.ledger"},
    # telemetry: the OpenTelemetry exporters behind the runtime's tracing seam (imported only when enabled)
    "anvil.telemetry": {"anvil.runtime"},
    # serve: the MCP wire at the bottom, inbound identity above it, the gateway and listener on top
    "anvil.serve.mcp": {"anvil.air", "anvil.ledger", "anvil.runtime"},
    "anvil.serve.auth": {"anvil.air", "anvil.runtime", "anvil.serve.mcp"},
    # discovery: the search index, meta-tools and disclosure modes over what the gateway serves
    "anvil.serve.discovery": {"anvil.air", "anvil.runtime", "anvil.serve.auth", "anvil.serve.mcp"},
    "anvil.serve": {
        "anvil.air",
        "anvil.bundle",
        "anvil.ledger",
        "anvil.runtime",
        "anvil.serve.auth",
        "anvil.serve.discovery",
        "anvil.serve.mcp",
    },
    "anvil.deploy": {"anvil.air", "anvil.bundle"},
    "anvil.client": {"anvil.runtime", "anvil.serve.auth", "anvil.serve.mcp"},
    # proof: shared evidence code at the root, one room per lane; lanes share only the mock
    # the disclosure figures serve the bundle in-process to measure what callers are shown
    "anvil.proof": {
        "anvil.air",
        "anvil.bundle",
        "anvil.compiler",
        "anvil.deploy",
        "anvil.runtime",
        "anvil.serve",
        "anvil.serve.discovery",
        "anvil.serve.mcp",
    },
    "anvil.proof.mock": {"anvil.air", "anvil.serve.mcp"},
    "anvil.proof.certify": {
        "anvil.air",
        "anvil.bundle",
        "anvil.compiler",
        "anvil.compiler.manifest",
        "anvil.proof",
        "anvil.proof.mock",
        "anvil.serve.discovery",
        "anvil.serve.mcp",
    },
    "anvil.proof.conformance": {
        "anvil.air",
        "anvil.bundle",
        "anvil.client",
        "anvil.runtime",
        "anvil.serve",
        "anvil.serve.mcp",
        "anvil.proof",
    },
    "anvil.proof.selftest": {
        "anvil.air",
        "anvil.bundle",
        "anvil.client",
        "anvil.runtime",
        "anvil.proof",
        "anvil.proof.mock",
    },
    "anvil.proof.simulate": {
        "anvil.air",
        "anvil.bundle",
        "anvil.compiler",
        "anvil.ledger",
        "anvil.runtime",
        "anvil.serve",
        "anvil.serve.mcp",
        "anvil.proof",
        "anvil.proof.mock",
    },
    "anvil.cli": {"*"},
    "anvil.__main__": {"anvil.cli"},
}


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["anvil", *parts])


@cache
def _modules() -> dict[str, Path]:
    return {_module_of(path): path for path in sorted(SRC.rglob("*.py"))}


def _room(module: str) -> str:
    if module in CORE:
        return "core"
    if module in {"anvil.client", "anvil.__main__"}:
        return module
    path = _modules()[module]
    return module if path.name == "__init__.py" else module.rsplit(".", 1)[0]


@cache
def _imports(module: str) -> frozenset[str]:
    """The modules of ours ``module`` imports anywhere in its body (deferred imports included).

    ``from anvil.x import y`` counts as importing ``anvil.x.y`` when that is a module, else ``anvil.x``.
    """
    known = _modules()
    tree = ast.parse(known[module].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known.keys()
            found |= submodules
            if len(submodules) < len(node.names):
                found.add(node.module)
    return frozenset(name for name in found if name in known and name != module)


def _may_import(room: str, target: str) -> bool:
    target_room = _room(target)
    if target_room in {"core", room}:
        return True
    allowed = ALLOWED[room]
    return "*" in allowed or target_room in allowed or target in allowed


def test_every_module_belongs_to_a_room_the_rules_name() -> None:
    unknown = sorted({_room(m) for m in _modules()} - ALLOWED.keys() - {"core"})
    assert unknown == []


def test_rooms_import_only_the_rooms_the_rules_allow() -> None:
    violations = [
        f"{module} imports {target}"
        for module in _modules()
        if _room(module) != "core"
        for target in sorted(_imports(module))
        if not _may_import(_room(module), target)
    ]
    assert violations == []


def test_core_modules_import_nothing_but_the_core() -> None:
    violations = [
        f"{module} imports {target}" for module in sorted(CORE) for target in _imports(module) if target not in CORE
    ]
    assert violations == []


def test_the_room_rules_have_no_circle() -> None:
    graph = {room: {t for t in targets if t in ALLOWED and t != "*"} for room, targets in ALLOWED.items()}
    assert _circles(graph) == []


def test_no_two_modules_import_each_other_even_through_others() -> None:
    graph = {module: set(_imports(module)) for module in _modules()}
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle_through_three_modules() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_module_is_over_the_size_limit() -> None:
    sizes = {module: path.read_text(encoding="utf-8").count("\n") for module, path in _modules().items()}
    assert {module: lines for module, lines in sizes.items() if lines > MAX_MODULE_LINES} == {}


def test_only_the_cli_reads_the_environment() -> None:
    readers = []
    for path in sorted(SRC.rglob("*.py")):
        if path.relative_to(SRC).parts[0] == "cli":
            continue
        text = path.read_text(encoding="utf-8")
        if "os.environ" in text or "os.getenv" in text or "getenv(" in text:
            readers.append(str(path.relative_to(SRC)))
    assert readers == []


# "issue 12", "issues 13 item 12", "(issue #9)": this project's tracker; the examples' GitHub issues are
# data ("issue #2" in the demo's narration, `/issues/{issue_number}` routes), so only prose forms count.
_TRACKER_REFERENCE = re.compile(r"\bissues? #?\d+\b(?! *[a-z_]*[/`}])|\bissue \d+ item\b", re.IGNORECASE)
_EXAMPLE_DATA = re.compile(r"(comment on|close|closes|reopen|open|on|of) issue #\d+", re.IGNORECASE)


def _prose_files() -> list[Path]:
    roots = [REPO / "src", REPO / "tests", REPO / "bench", REPO / "docs"]
    files = [path for root in roots for path in sorted(root.rglob("*")) if path.suffix in {".py", ".md", ".toml"}]
    return [*files, REPO / "README.md", REPO / "pyproject.toml", REPO / "Makefile", REPO / "examples" / "demo.py"]


def test_no_comment_docstring_or_doc_refers_to_a_tracker_number() -> None:
    hits = []
    for path in _prose_files():
        if path == Path(__file__) or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _TRACKER_REFERENCE.search(line) and not _EXAMPLE_DATA.search(line):
                hits.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert hits == []


def test_the_tracker_reference_rule_tells_references_from_example_data() -> None:
    assert _TRACKER_REFERENCE.search("bounded reads (issue 9): never block")
    assert _TRACKER_REFERENCE.search("Inspector (issues 13 item 12, 14 item 1)")
    assert not _TRACKER_REFERENCE.search('"/repos/o/r/issues/{issue_number}"')
    assert _EXAMPLE_DATA.search('printer.step("A reversible write: comment on issue #2, with a ledger id")')
