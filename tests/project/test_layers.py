"""The house's layers: every import in src/reljudge runs downward, and no modules import each
other in a circle.

The order is written once, here, as data. A module belongs to the layer of its top-level name
(``reljudge.store.merge`` -> ``store``). A module may import its own layer and the layers
below it; imports inside functions count as much as those at the top of a file. The package
root (``reljudge/__init__.py``, the front door) may import anything and nothing imports it.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("plain data", ("errors", "version", "choices", "grades", "values", "columns", "trec_data",
                    "labels", "tables", "frames")),
    ("inputs", ("io", "pool")),
    ("measures and statistics", ("metrics", "stats")),
    ("the label store", ("store",)),
    ("the LLM judge", ("judge",)),
    ("inference from samples", ("infer",)),
    ("the audit", ("audit",)),
    ("probes of a judge", ("probe",)),
    ("people and presentation", ("assess", "report")),
    ("the whole job", ("pipeline", "demo")),
    ("commands and test servers", ("cli", "testing", "__main__")),
]
FRONT_DOOR = "reljudge"

SRC = Path(__file__).resolve().parents[2] / "src" / "reljudge"


def modules(package: Path) -> dict[str, Path]:
    """Every module of the package folder, by dotted name (``reljudge.store.merge``)."""
    out = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    assert out, f"no module under {package}"  # else every check below passes on nothing
    return out


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The file's syntax tree, parsed once."""
    return ast.parse(path.read_text(), str(path))


#: what holds statements: a statement's body, an except clause, a match case (an expression
#: never does: a lambda's body is an expression)
BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def _statements(tree: ast.Module) -> list[ast.AST]:
    """Every statement of the file, at any depth (a function's, a class's, a branch's), without
    walking into the expressions, which hold no statement (nor an import)."""
    found, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        found.append(node)
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                todo += [v for v in value if isinstance(v, BLOCKS)]
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported reljudge module, line) for every import statement in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in _statements(_tree(path)):
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


@functools.cache
def edges(package: Path) -> dict[str, list[tuple[str, int]]]:
    """Each module's reljudge imports, (module, line); read once per package folder."""
    found = modules(package)
    return {name: _imports(name, path, found) for name, path in found.items()}


def _layer(module: str) -> int | None:
    top = module.split(".")[1] if "." in module else None
    for i, (_, names) in enumerate(LAYERS):
        if top in names:
            return i
    return None


def upward_imports(package: Path) -> list[str]:
    """'file:line (layer) imports module (higher layer)' for every import that runs upward,
    the front door's included."""
    where, upward = modules(package), []
    for name, imports in edges(package).items():
        if name == FRONT_DOOR:
            continue
        for target, line in imports:
            at = f"{where[name].relative_to(package.parent)}:{line}"
            if target == FRONT_DOOR:
                upward.append(f"{at} imports the front door `reljudge`")
            elif None not in (_layer(name), _layer(target)) and _layer(target) > _layer(name):
                upward.append(f"{at} ({LAYERS[_layer(name)][0]}) "
                              f"imports {target} ({LAYERS[_layer(target)][0]})")
    return upward


def circles(package: Path) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    imports = edges(package)
    graph = {m: sorted({t for t, _ in imports[m] if t in imports and t != m}) for m in imports}
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


def test_every_module_has_a_layer():
    lost = sorted(m for m in modules(SRC) if m != FRONT_DOOR and _layer(m) is None)
    assert not lost, f"modules in no layer of LAYERS: {lost}"


def test_imports_run_downward():
    upward = upward_imports(SRC)
    assert not upward, "imports that run upward:\n" + "\n".join(upward)


def test_no_modules_import_each_other_in_a_circle():
    assert circles(SRC) == []


def plant(root: Path, files: dict[str, str]) -> Path:
    """Write a fake ``reljudge`` package under root; its folder."""
    for name, text in files.items():
        path = root / "reljudge" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "reljudge"


#: a package with three upward imports (one inside a function, one relative), an import of
#: the front door, one circle, one print and one print-by-default; the rest is allowed
PLANTED = {
    "__init__.py": "from reljudge.cli import main\n",  # the front door may import anything
    "trec_data.py": "import json\n\n\ndef f():\n    from reljudge.io import coerce\n",
    "io/__init__.py": "",
    "grades.py": "",
    "io/coerce.py": "from reljudge import grades\nfrom .. import grades as g\n",
    "metrics/__init__.py": "import reljudge\n",
    "store/__init__.py": "from .merge import merge\n",
    "store/merge.py": "from reljudge.io.coerce import x\nfrom reljudge.infer import sample\n",
    "judge/__init__.py": "",
    "judge/cache.py": "from reljudge.judge import client\n",
    "judge/client.py": "from . import cache\nfrom reljudge.store import merge\n",
    "infer/__init__.py": "",
    "infer/sample.py": "from ..audit import agree\n\n\ndef draw(n, say=print):\n    return n\n",
    "audit/__init__.py": "def f():\n    print('x')\n",
    "cli/__init__.py": "from reljudge.judge import cache\nprint('a command may print')\n",
}


def test_the_scanner_finds_exactly_the_planted_upward_imports_and_circle(tmp_path):
    """The rules themselves, run on a planted package: what they must find and nothing else."""
    package = plant(tmp_path, PLANTED)
    assert sorted(upward_imports(package)) == [
        "reljudge/infer/sample.py:1 (inference from samples) imports reljudge.audit (the audit)",
        "reljudge/metrics/__init__.py:1 imports the front door `reljudge`",
        "reljudge/store/merge.py:2 (the label store) imports reljudge.infer.sample "
        "(inference from samples)",
        "reljudge/trec_data.py:5 (plain data) imports reljudge.io.coerce (inputs)"]
    assert circles(package) == [["reljudge.judge.cache", "reljudge.judge.client"]]
    assert sorted(prints(package)) == ["reljudge.audit:2 calls print",
                                       "reljudge.infer.sample:4 defaults a callback to print"]


def test_the_planted_package_without_its_faults_passes(tmp_path):
    """Without the planted faults the same package is clean: the findings above are the
    faults', not the scanner's noise."""
    clean = dict(PLANTED)
    clean["trec_data.py"] = "import json\n"
    clean["metrics/__init__.py"] = ""
    clean["store/merge.py"] = "from reljudge.io.coerce import x\n"
    clean["judge/cache.py"] = ""
    clean["infer/sample.py"] = "def draw(n, say=None):\n    return n\n"
    clean["audit/__init__.py"] = ""
    package = plant(tmp_path, clean)
    assert (upward_imports(package), circles(package), prints(package)) == ([], [], [])


#: the layers whose code may print: the commands, and the test servers' own console
PRINTERS = ("cli", "testing", "__main__")


def prints(package: Path) -> list[str]:
    """'module:line' for every print call, or print as a default, below the commands."""
    found = []
    for name, path in modules(package).items():
        top = name.split(".")[1] if "." in name else ""
        if name == FRONT_DOOR or top in PRINTERS or "print" not in path.read_text():
            continue  # (a call of print, or print as a default, spells it)
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "print":
                found.append(f"{name}:{node.lineno} calls print")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defaults = node.args.defaults + [d for d in node.args.kw_defaults if d]
                found += [f"{name}:{d.lineno} defaults a callback to print" for d in defaults
                          if isinstance(d, ast.Name) and d.id == "print"]
    return found


def test_library_code_never_prints():
    """Below the commands, code tells through warnings, logging or a callback it is given; it
    never calls print, nor takes print as a callback's default."""
    found = prints(SRC)
    assert not found, "\n".join(found)
