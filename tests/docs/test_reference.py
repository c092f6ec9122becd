"""The reference pages write themselves: docs/cli.md is every command's and verb's --help and
docs/api.md every front-door name's signature and docstring, as ``.ci/reference.py`` writes
them; a committed page that differs fails here with the command that remakes it."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

import pytest

import reljudge

ROOT = Path(__file__).resolve().parent.parent.parent


def load_reference():
    """``.ci/reference.py`` as a module (``.ci`` is no package)."""
    spec = importlib.util.spec_from_file_location("reference", ROOT / ".ci" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = load_reference()


def written_under(page: Path) -> str | None:
    """The Python version the committed page says wrote it."""
    m = re.search(r"under Python (\d+\.\d+)", page.read_text()) if page.exists() else None
    return m.group(1) if m else None


@pytest.mark.parametrize("page", [reference.CLI_PAGE, reference.API_PAGE],
                         ids=lambda p: p.name)
def test_the_committed_reference_page_is_what_the_code_writes(page):
    version = written_under(page)
    if version is not None and version != reference.PYTHON:
        pytest.skip(f"{page.name} was written under Python {version} (argparse's layout "
                    f"differs by version); this is {reference.PYTHON}")
    assert page.read_text() == reference.pages()[page], (
        f"{page.relative_to(ROOT)} is out of date: run {reference.REGENERATE}")


def test_every_command_verb_and_flag_has_its_place_in_the_cli_page():
    from reljudge.cli import build_parser

    text = reference.cli_page()
    headings = re.findall(r"^#+ (reljudge.*)$", text, flags=re.M)

    def walk(parser, words):
        assert " ".join(words) in headings
        for action in parser._actions:
            for flag in action.option_strings:
                if action.help != argparse.SUPPRESS:
                    assert flag in text, f"{' '.join(words)} {flag}"
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*words, name))

    walk(build_parser(), ("reljudge",))
    assert headings[0] == "reljudge" and len(headings) == len(set(headings))
    assert {"reljudge labels merge", "reljudge labels copy", "reljudge eval"} <= set(headings)


def test_the_cli_page_is_the_same_whatever_the_terminal_and_environment(monkeypatch):
    """argparse wraps at the terminal's width, and --store is optional where RELJUDGE_STORE
    names a store: the page is the same whatever the terminal and the environment of whoever
    writes it (80 columns, no RELJUDGE_STORE)."""
    monkeypatch.setenv("COLUMNS", "200")
    wide = reference.cli_page()
    monkeypatch.setenv("COLUMNS", "50")
    assert reference.cli_page() == wide
    monkeypatch.delenv("COLUMNS")
    assert reference.cli_page() == wide
    monkeypatch.setenv("RELJUDGE_STORE", str(ROOT / "labels.sqlite"))  # --store optional then
    assert reference.cli_page() == wide
    assert "  --store STORE        the label store: a SQLite file, or\n" in wide  # 80 columns


def test_every_front_door_name_has_its_entry_in_the_api_page():
    text = reference.api_page()
    entries = re.findall(r"^## `reljudge\.(\w+)`$", text, flags=re.M)
    assert sorted(entries) == sorted(reljudge.__all__)
    assert "reljudge.write_run(run: Run, path: str | Path, tag: str | None = None) -> None" in text
    assert "### `LabelStore.merge`" in text  # a method of one of the store's parts
    assert "\nasync Labeller.label(\n" in text
    assert "- `model: str` (required): model name" in text  # JudgeConfig's fields
    assert " at 0x" not in text  # no address of an object: the page is the same every run


def test_the_check_names_a_stale_page_and_the_command_that_remakes_it(tmp_path, monkeypatch,
                                                                     capsys):
    for name, path in (("CLI_PAGE", "cli.md"), ("API_PAGE", "api.md")):
        monkeypatch.setattr(reference, name, tmp_path / path)
    monkeypatch.setattr(reference, "ROOT", tmp_path)
    assert reference.main([]) == 0
    assert reference.main(["--check"]) == 0
    page = tmp_path / "cli.md"
    page.write_text(page.read_text().replace("--measure", "--measures", 1))
    assert reference.main(["--check"]) == 1
    assert capsys.readouterr().err == f"cli.md is out of date: run {reference.REGENERATE}\n"


def test_the_development_page_gives_the_command_the_check_prints():
    assert f"`{reference.REGENERATE}`" in (ROOT / "docs" / "development.md").read_text()
