"""The house's layers: every import in src/reljudge runs downward, and no modules import each
other in a circle.

The order is written once, here, as data. A module belongs to the layer of its top-level name
(``reljudge.store.merge`` -> ``store``). A module may import its own layer and the layers
below it; imports inside functions count as much as those at the top of a file. The package
root (``reljudge/__init__.py``, the front door) may import anything and nothing imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("plain data", ("errors", "version", "grades", "values", "columns", "types", "labels",
                    "tables", "frames")),
    ("inputs", ("io", "pool")),
    ("measures and statistics", ("metrics", "stats")),
    ("the label store", ("store",)),
    ("the LLM judge", ("judge",)),
    ("inference from samples", ("infer",)),
    ("the audit", ("audit",)),
    ("people and presentation", ("assess", "report")),
    ("the whole job", ("pipeline", "demo")),
    ("commands and test servers", ("cli", "testing", "__main__")),
]
FRONT_DOOR = "reljudge"

SRC = Path(__file__).resolve().parents[1] / "src" / "reljudge"


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported reljudge module, line) for every import statement in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "reljudge"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "reljudge":
                continue
            for alias in node.names:  # `from reljudge.io import coerce` imports a module
                sub = f"{target}.{alias.name}"
                found.append((sub if sub in modules else target, node.lineno))
    return found


def _layer(module: str) -> int | None:
    top = module.split(".")[1] if "." in module else None
    for i, (_, names) in enumerate(LAYERS):
        if top in names:
            return i
    return None


MODULES = _modules()
EDGES = {name: _imports(name, path, MODULES) for name, path in MODULES.items()}


def test_every_module_has_a_layer():
    lost = sorted(m for m in MODULES if m != FRONT_DOOR and _layer(m) is None)
    assert not lost, f"modules in no layer of LAYERS: {lost}"


def test_imports_run_downward():
    upward = []
    for name, imports in EDGES.items():
        if name == FRONT_DOOR:
            continue
        for target, line in imports:
            if target == FRONT_DOOR:
                upward.append(f"{MODULES[name].relative_to(SRC.parent)}:{line} imports the "
                              f"front door `reljudge`")
            elif None not in (_layer(name), _layer(target)) and _layer(target) > _layer(name):
                upward.append(f"{MODULES[name].relative_to(SRC.parent)}:{line} ({LAYERS[_layer(name)][0]}) "
                              f"imports {target} ({LAYERS[_layer(target)][0]})")
    assert not upward, "imports that run upward:\n" + "\n".join(upward)


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph = {m: sorted({t for t, _ in EDGES[m] if t in MODULES and t != m}) for m in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def test_no_modules_import_each_other_in_a_circle():
    assert _cycles() == []


@pytest.mark.parametrize("bad", [("reljudge.types", "reljudge.io.coerce"),
                                 ("reljudge.store.merge", "reljudge.infer.sample")])
def test_the_check_sees_an_upward_import(bad):
    """The rule itself: an import from a lower layer to a higher one is upward."""
    low, high = bad
    assert _layer(low) < _layer(high)


#: the layers whose code may print: the commands, and the test servers' own console
PRINTERS = ("cli", "testing", "__main__")


def test_library_code_never_prints():
    """Below the commands, code tells through warnings, logging or a callback it is given; it
    never calls print, nor takes print as a callback's default."""
    found = []
    for name, path in MODULES.items():
        top = name.split(".")[1] if "." in name else ""
        if name == FRONT_DOOR or top in PRINTERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "print":
                found.append(f"{name}:{node.lineno} calls print")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defaults = node.args.defaults + [d for d in node.args.kw_defaults if d]
                found += [f"{name}:{d.lineno} defaults a callback to print" for d in defaults
                          if isinstance(d, ast.Name) and d.id == "print"]
    assert not found, "\n".join(found)
