"""The tests' layout: every test module sits in the folder of the area it tests
(tests/AREA/test_*.py, AREA a package), never flat in tests/, and only the shared helpers sit
at the top."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
#: the area folders: a package of reljudge, or a part of the project as a whole
#: (files is reljudge.io, benchmarks tests bench/: a folder named io or bench would shadow the
#: standard library's io, or bench/, for ruff's import sorting)
AREAS = {"api", "assess", "audit", "benchmarks", "cli", "docs", "files", "infer", "judge",
         "metrics", "pipeline", "probe", "project", "report", "stats", "store", "testing"}
#: what may sit directly in tests/: the shared fixtures and helpers every area imports, and
#: the helpers of a few areas, each named NAME_support.py
HELPERS = {"__init__.py", "conftest.py", "helpers.py", "pg.py", "backends.py", "strategies.py",
           "browser.py", "llama_server.py", "schedule.py"}
SUPPORT = "_support.py"
#: folders of data, not tests
DATA = {"data", "artifacts", "__pycache__"}


def misplaced(tests: Path) -> list[str]:
    """The Python files and folders of ``tests`` outside the layout, each with why."""
    problems = []
    for path in sorted(tests.iterdir()):
        if path.is_dir():
            if path.name in DATA:
                continue
            if path.name not in AREAS:
                problems.append(f"{path.name}/: not an area folder ({', '.join(sorted(AREAS))})")
                continue
            if not (path / "__init__.py").exists():
                problems.append(f"{path.name}/: no __init__.py (its modules' names would clash)")
            for sub in sorted(path.iterdir()):
                if sub.is_dir() and sub.name != "__pycache__":
                    problems.append(f"{path.name}/{sub.name}/: areas are one folder deep")
                elif sub.suffix == ".py" and sub.name != "__init__.py" and \
                        not sub.name.startswith("test_"):
                    problems.append(f"{path.name}/{sub.name}: not a test module; shared "
                                    "helpers live at the top of tests/")
        elif path.suffix == ".py" and path.name not in HELPERS and \
                not path.name.endswith(SUPPORT):
            problems.append(f"{path.name}: a test module outside an area folder")
    return problems


def test_every_test_module_is_in_its_area_folder():
    assert misplaced(TESTS) == []
    assert sum(1 for _ in TESTS.glob("*/test_*.py")) > 100  # the check looked at the tests


def test_a_flat_test_an_unknown_folder_and_a_helper_in_an_area_are_found(tmp_path):
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "test_flat.py").write_text("")
    (tmp_path / "misc").mkdir()
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "__init__.py").write_text("")
    (tmp_path / "store" / "test_ok.py").write_text("")
    (tmp_path / "store" / "util.py").write_text("")
    (tmp_path / "judge").mkdir()
    (tmp_path / "judge" / "test_no_init.py").write_text("")
    assert misplaced(tmp_path) == [
        "judge/: no __init__.py (its modules' names would clash)",
        "misc/: not an area folder (" + ", ".join(sorted(AREAS)) + ")",
        "store/util.py: not a test module; shared helpers live at the top of tests/",
        "test_flat.py: a test module outside an area folder"]
