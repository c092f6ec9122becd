"""Starting up: ``reljudge --version`` and ``reljudge --help`` answer without importing numpy
or the library's heavy packages (the commands import those when they run), ``import reljudge``
stays light while every public name still resolves, and the help texts read as before."""

from __future__ import annotations

import subprocess
import sys

import pytest

import reljudge

HEAVY = ("numpy", "pydantic", "reljudge.metrics", "reljudge.store", "reljudge.judge",
         "reljudge.audit", "reljudge.io", "reljudge.stats", "reljudge.infer")

#: run ``python -m reljudge ARGV`` in this process's stead and print the modules it loaded
LOADED = ("import runpy, sys\n"
          "sys.argv = ['reljudge', *sys.argv[1:]]\n"
          "try:\n"
          "    runpy.run_module('reljudge', run_name='__main__')\n"
          "except SystemExit:\n"
          "    pass\n"
          "print('\\nMODULES', ' '.join(sorted(sys.modules)))\n")


def loaded(*argv: str) -> set[str]:
    """The modules ``reljudge ARGV`` has imported by the time it is done."""
    out = subprocess.run([sys.executable, "-c", LOADED, *argv], capture_output=True,
                         text=True, check=True).stdout
    return set(out.rpartition("\nMODULES ")[2].split())


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY)))


@pytest.mark.parametrize("argv", [["--version"], ["--help"], []])
def test_version_and_help_import_nothing_heavy(argv):
    modules = loaded(*argv)
    assert "reljudge.cli" in modules
    assert heavy(modules) == []


def test_version_builds_no_parser():
    assert not [m for m in loaded("--version") if m.startswith("reljudge.cli.")]


#: commands whose flags are built from the library's models (label: the judge's settings;
#: report: their price fields' descriptions) load pydantic for --help; the others nothing heavy
LIGHT_HELP = ("eval", "labels", "sample", "estimate", "calibrate", "pool", "run", "audit",
              "assess", "compare", "demo", "batch")


@pytest.mark.parametrize("command", LIGHT_HELP)
def test_a_commands_help_imports_what_that_command_needs_only(command):
    modules = loaded(command, "--help")
    assert f"reljudge.cli.{command}_cmd" in modules
    assert heavy(modules) == []


def test_the_shared_choices_are_the_ones_the_library_checks():
    """The flags' choices come from ``reljudge.choices``; the library refuses what is not in
    them (each check names the same tuple)."""
    from importlib import import_module

    from reljudge import choices

    def of(module: str, name: str):
        return getattr(import_module(f"reljudge.{module}"), name)

    assert of("metrics.ranking", "COMPAT") is of("metrics.evaluate", "COMPAT") is choices.COMPAT
    assert of("io.prefs", "KINDS") is choices.KINDS
    assert of("infer.sample", "DESIGNS") is choices.DESIGNS
    assert of("assess.task", "ORDERS") is choices.ORDERS
    assert of("stats.compare", "MAX_TRIALS") is choices.MAX_TRIALS


def python_says(code: str) -> str:
    """What a fresh Python process running ``code`` prints."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout


def test_import_reljudge_imports_nothing_heavy():
    code = "import sys, reljudge; print(' '.join(sorted(sys.modules)))"
    out = python_says(code)
    assert heavy(set(out.split())) == []


def test_every_public_name_resolves_in_a_fresh_process():
    code = ("import reljudge\n"
            "missing = [n for n in reljudge.__all__ if getattr(reljudge, n, None) is None]\n"
            "print(missing, sorted(dir(reljudge)) == sorted(reljudge.__all__))\n"
            "from reljudge import evaluate, audit, LabelStore, GRADE_MAX  # noqa: F401\n")
    out = python_says(code)
    assert out.split() == ["[]", "True"]


def test_audit_stays_the_function_when_its_subpackage_is_imported_first():
    code = ("import reljudge.audit.systems, reljudge\n"
            "from reljudge import audit\n"
            "print(reljudge.audit.__module__, audit is reljudge.audit)\n")
    out = python_says(code)
    assert out.split() == ["reljudge.audit.judges", "True"]


def test_version_says_the_package_version():
    out = subprocess.run([sys.executable, "-m", "reljudge", "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert out == f"reljudge {reljudge.__version__}\n"


def test_a_command_parser_is_built_when_looked_up():
    from reljudge.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["eval", "qrels", "a.run"])
    assert args.command == "eval" and args.func.__module__ == "reljudge.cli.eval_cmd"
    sub = next(a for a in parser._actions if a.dest == "command")
    assert all(p is not None for p in sub.choices.values())


def test_a_listed_command_without_its_module_fails_loudly(monkeypatch):
    """Every name in COMMANDS has its module; one missing is a broken install, not a command
    to leave out of --help."""
    from reljudge import cli

    sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
    assert list(sub.choices) == list(cli.COMMANDS)
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, "nosuch"))
    with pytest.raises(ModuleNotFoundError, match="reljudge.cli.nosuch_cmd"):
        cli.build_parser()


def test_eval_imports_neither_the_store_nor_the_judge_nor_the_audit():
    from tests.helpers import EXAMPLE

    modules = loaded("eval", str(EXAMPLE / "human.qrels"), str(EXAMPLE / "runs" / "bm25.run"))
    assert "reljudge.metrics" in modules
    assert [m for m in ("pydantic", "reljudge.store", "reljudge.judge", "reljudge.audit")
            if m in modules] == []


def test_probe_help_loads_the_judges_settings_but_neither_numpy_nor_the_store():
    """probe's flags come from the judge's settings (pydantic), as label's; the probes' maths
    and the store load when a probe runs."""
    modules = loaded("probe", "--help")
    assert "reljudge.cli.probe_cmd" in modules and "reljudge.probe.kinds" in modules
    assert not [m for m in modules if m == "numpy" or m.startswith(("numpy.", "reljudge.store",
                                                                    "reljudge.probe.run"))]
