"""The build's one step beyond pyproject.toml: the data `reljudge demo` reads ships inside the
package (reljudge/examples/), copied from the repository's examples/, its one copy."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: the examples the demo reads, without the scripts that made their data
DEMO_EXAMPLES = ("hr-handbook", "llmjudge-dl23")
LEFT_OUT = ("*.py", "out", "__pycache__", "*.sqlite*")


class BuildWithExamples(build_py):
    """build_py, then the demo's examples copied into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads examples/
            return
        target = Path(self.build_lib) / "reljudge" / "examples"
        shutil.rmtree(target, ignore_errors=True)
        for name in DEMO_EXAMPLES:
            shutil.copytree(Path(__file__).resolve().parent / "examples" / name, target / name,
                            ignore=shutil.ignore_patterns(*LEFT_OUT))


setup(cmdclass={"build_py": BuildWithExamples})
