"""reljudge as a user gets it: an sdist built from the checkout, a wheel built from that sdist,
installed into a fresh venv and run from another folder (no source tree in sight)."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
#: what the build reads (a copy is built: the checkout gets no build/ nor egg-info)
SOURCES = ("src", "examples", "pyproject.toml", "setup.py", "MANIFEST.in", "README.md")


#: ``python -c WHEEL_FROM_SDIST SDIST FOLDER DIST``: unpack SDIST into FOLDER and build its wheel
#: into DIST with the setuptools backend
WHEEL_FROM_SDIST = ("import os, sys, tarfile\n"
                    "from setuptools import build_meta\n"
                    "sdist, folder, dist = sys.argv[1:]\n"
                    "safe = {'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}\n"
                    "with tarfile.open(sdist) as tar:\n"
                    "    tar.extractall(folder, **safe)\n"
                    "(top,) = os.listdir(folder)\n"
                    "os.chdir(os.path.join(folder, top))\n"
                    "build_meta.build_wheel(dist)\n")


def _run(argv: list[str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "RELJUDGE_", "PYTHON"))}
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, env=env,
                       **kwargs)
    assert p.returncode == 0, (argv, p.stdout[-2000:], p.stderr[-2000:])
    return p


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the fresh venv's bin folder, a folder far from the source) with reljudge installed from
    a wheel built from an sdist of the checkout. The venv reaches the test environment's
    packages (numpy, ...) through a .pth line, which does not run that environment's editable
    install of reljudge, so ``import reljudge`` can only find the wheel's."""
    tmp = tmp_path_factory.mktemp("wheel")
    copy = tmp / "checkout"
    copy.mkdir()
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns(
                "__pycache__", "*.egg-info", "out"))
        else:
            shutil.copy(src, copy / name)
    _run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                                "build_meta.build_sdist(sys.argv[1])", str(tmp / "dist")],
         cwd=copy)
    sdist = next((tmp / "dist").glob("reljudge-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    assert any(n.endswith("examples/hr-handbook/pipeline.toml") for n in names)
    # the wheel built from the unpacked sdist by the build backend, in a process of its own, as
    # pip does (without pip's own start-up and its second process for the backend's hooks)
    _run([sys.executable, "-c", WHEEL_FROM_SDIST, str(sdist), str(tmp / "unpacked"),
          str(tmp / "dist")], cwd=tmp)
    wheel = next((tmp / "dist").glob("reljudge-*.whl"))
    _run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], cwd=tmp)
    venv_python = tmp / "venv" / "bin" / "python"
    packages = Path(_run([str(venv_python), "-c", "import sysconfig; "
                                                  "print(sysconfig.get_path('purelib'))"],
                         cwd=tmp).stdout.strip())
    (packages / "test-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(venv_python), "install", "--no-deps",
          "--no-index", "-q", str(wheel)], cwd=tmp)
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    return tmp / "venv" / "bin", elsewhere


@pytest.mark.slow  # builds an sdist and a wheel, makes a venv, runs the demo (about a minute)
def test_the_wheel_runs_demo_eval_and_assess_from_another_folder(installed):
    bin_, elsewhere = installed
    where = _run([str(bin_ / "python"), "-c", "import reljudge, reljudge.demo as d; "
                                              "print(reljudge.__file__); print(d.PACKAGED)"],
                 cwd=elsewhere).stdout.split()
    assert Path(where[0]).is_relative_to(bin_.parent), where  # the wheel's, not the source's
    examples = Path(where[1])
    assert (examples / "hr-handbook" / "pipeline.toml").is_file()
    assert not list(examples.rglob("*.py"))  # the data only, not the scripts that made it
    assert (Path(where[0]).parent / "py.typed").is_file()  # a user's type checker reads our hints

    demo = _run([str(bin_ / "reljudge"), "demo", "--quiet"], cwd=elsewhere)
    assert "llmjudge-dl23" in demo.stdout and str(examples / "llmjudge-dl23") in demo.stdout
    assert (elsewhere / "reljudge-demo" / "llmjudge-dl23" / "audit.json").is_file()
    assert (elsewhere / "reljudge-demo" / "hr-handbook").is_dir()

    hr = examples / "hr-handbook"
    scores = _run([str(bin_ / "reljudge"), "eval", str(hr / "human.qrels"),
                   str(hr / "runs" / "bm25.run"), "-m", "nDCG@10", "--json"], cwd=elsewhere)
    assert '"nDCG@10"' in scores.stdout
    assert "usage: reljudge assess" in _run([str(bin_ / "reljudge"), "assess", "--help"],
                                            cwd=elsewhere).stdout


def test_the_source_package_carries_the_py_typed_marker():
    """PEP 561: the marker that tells a user's type checker to read reljudge's hints; the
    slow test above checks the wheel ships it (pyproject.toml's package-data)."""
    assert (ROOT / "src" / "reljudge" / "py.typed").is_file()
