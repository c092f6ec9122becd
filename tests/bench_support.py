"""Running a bench script end to end inside the test process."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest


def run_script(script: Path, args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``script`` as ``python script ARGS`` runs it (as __main__, its own sys.path line
    included) but in this process: the test is about the script's code, not a process's
    start-up, and a new interpreter would import numpy, scipy and reljudge again. Fails on
    an exception or a nonzero exit; the caller reads the output with capsys."""
    monkeypatch.setattr(sys, "argv", [str(script), *args])
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    try:
        with pytest.raises(SystemExit) as done:
            runpy.run_path(str(script), run_name="__main__")
    finally:
        # a script that puts its own folder on the path imports its neighbours as top-level
        # modules (bench/favours.py: ``ppi``): they leave with the path
        for name in set(sys.modules) - before:
            if "." not in name and Path(getattr(sys.modules[name], "__file__", None) or
                                        "/").parent == script.parent:
                del sys.modules[name]
    assert done.value.code in (0, None), f"{script.name} exited {done.value.code}"
