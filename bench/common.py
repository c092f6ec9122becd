"""What the bench scripts share: their argument parser, and the table each prints, as aligned
text or (``--markdown``) as the Markdown table docs/benchmarks.md and the README show, headed by
the machine, the date and the commit it was measured at (bench/tables.py collects them)."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: how a table's heading line starts; tests/docs/test_pages.py and bench/tables.py look for it
HEADING = "Measured on "


def parser(doc: str | None, formatter: type[argparse.HelpFormatter]
           = argparse.RawDescriptionHelpFormatter, markdown: bool = True
           ) -> argparse.ArgumentParser:
    """A bench script's parser: its docstring as the description, and (``markdown``) the
    ``--markdown`` flag of a script that prints a table."""
    p = argparse.ArgumentParser(description=doc, formatter_class=formatter)
    if markdown:
        p.add_argument("--markdown", action="store_true",
                       help="print the table in Markdown, headed by the machine, date and "
                            "commit (as docs/benchmarks.md shows it; bench/tables.py collects "
                            "it)")
    return p


def cpu_model() -> str:
    """The processor's model name as the kernel reports it (else the platform's word)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def commit() -> str:
    """The checkout's short commit, with ``+changes`` when the code measured (src/, bench/)
    differs from it; the pages bench/tables.py writes do not count."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    head = git("rev-parse", "--short=7", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", "src", "bench")
    return head + ("+changes" if changed else "")


def heading(argv: list[str] | None = None) -> str:
    """One line: the machine (CPU model, cores, Python, load), the date, the commit and the
    command that printed the table."""
    argv = sys.argv if argv is None else argv
    script = Path(argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    command = shlex.join(["python", str(shown), *argv[1:]])
    return (f"{HEADING}{cpu_model()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}; "
            f"{datetime.date.today().isoformat()}, commit {commit()}: `{command}`")


def table(header: list[str], rows: list[list[str]], markdown: bool,
          caption: str | None = None, left: int = 1) -> str:
    """The rows under their header: Markdown headed by ``heading()`` and ``caption``, or text
    in columns (the first ``left`` aligned left, the others right)."""
    if markdown:
        lines = [heading(), *([caption] if caption else []), ""]
        lines += ["| " + " | ".join(r) + " |" for r in [header, ["---"] * len(header), *rows]]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [caption] if caption else []
    lines += ["  ".join(c.ljust(w) if i < left else c.rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
              for r in [header, *rows]]
    return "\n".join(lines)
