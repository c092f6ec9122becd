"""The docs cannot rot: every command in README.md, docs/*.md and the examples' READMEs is
executed.

Rules: every line of a ```bash block runs in order, from a scratch folder holding a copy of
``examples/`` (so paths read as they do from the repository root; one folder per page, so a
page runs on its own), with the LLM endpoint pointed at the local scripted server; ```python
blocks run there too, in order, as a user pastes a page's snippets into one fresh Python
session, each block in a namespace of its own (it imports what it uses). What is checked is
what the commands do, not their process: the pages' commands and snippets run in one Python
process (tests/session_support.py), each command as ``reljudge.cli.main`` with its own folder
and environment, as a shell would give it. ``export NAME=VALUE``
sets a variable for the lines after it (``$NAME`` is expanded); a block that exports a
``postgresql://`` store runs against the PostgreSQL server the tests start, its URL in place
of the documented one. The two fresh-machine
commands are not re-installed here: the test command must be exactly what ``.ci/run`` runs,
and the install-and-demo command's ``reljudge demo`` runs like any other command.

A ```text block that shows ``reljudge`` commands is not run (it needs a real Batch API, a
browser, a download, ...): the line before it must be ``<!-- not run: WHY; tests/test_X.py
... -->`` naming the test module that runs the same, and each command's subcommand must exist
and list every ``--flag`` the block uses in its ``--help``.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import importlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reljudge.cli import main
from reljudge.testing import FakeOpenAI
from tests.helpers import grader
from tests.session_support import CommandSession

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "examples").glob("*/README.md"))]
TEAM_PAGE = ROOT / "docs" / "store.md"  # the PostgreSQL block ("Working as a team")
NOT_RUN = re.compile(r"<!-- not run: [^\n]*?(tests/((?:\w+/)*test_\w+)\.py)[^\n]*-->\n"
                     r"```text\n(.*?)```", flags=re.S)
INSTALL = re.compile(r"^python3 -m venv \.venv && \. \.venv/bin/activate && pip install -e "
                     r"(\S+) && (.+)$")


def blocks(path: Path, lang: str) -> list[str]:
    """The contents of the fenced blocks of one language."""
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(), flags=re.S)


def commands(block: str) -> list[str]:
    """The block's commands, continuation lines joined, comments dropped."""
    text = block.replace("\\\n", " ")
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_readme_has_the_two_fresh_machine_commands_and_ci_runs_the_second():
    first, second = (INSTALL.match(c) for c in commands(blocks(ROOT / "README.md", "bash")[0])
                     + commands(blocks(ROOT / "README.md", "bash")[1]))
    assert first and first.group(2) == "reljudge demo"
    assert second and second.group(1) == "'.[test]'"
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands(blocks(ROOT / "README.md", "bash")[1])[0] in ci.splitlines()


def test_readme_fits_on_a_page_and_leaves_the_reference_to_docs():
    """The README is a page (the reference is in docs/), and sends no one outside the
    repository (no ../shared)."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert "shared/" not in text
    linked = set(re.findall(r"\]\(docs/([\w-]+)\.md", text))
    assert linked == {p.stem for p in (ROOT / "docs").glob("*.md")}


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """The process that runs the pages' commands and snippets, one after another."""
    with CommandSession(tmp_path_factory.mktemp("session") / "stderr") as process:
        yield process


@pytest.fixture
def scratch(tmp_path_factory):
    """A folder with a copy of the examples, like the repository root (one per page)."""
    folder = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "examples", folder / "examples",
                    ignore=shutil.ignore_patterns("out"))
    return folder


def run_line(line: str, cwd: Path, env: dict,
             session: CommandSession) -> subprocess.CompletedProcess:
    """Run one documented command in ``session`` with the arguments and environment a shell
    would give it (env prefixes, globs)."""
    args, env = shell_words(line, cwd, env)
    return session.reljudge(*args, cwd=cwd, env=env)


def shell_words(line: str, cwd: Path, env: dict) -> tuple[list[str], dict]:
    """The arguments of one documented ``reljudge`` command and its environment, as a shell
    makes them (variables expanded, env prefixes, globs)."""
    m = INSTALL.match(line)
    if m:
        line = m.group(2)
    words = [re.sub(r"\$(\w+)", lambda v: env[v.group(1)], w) for w in shlex.split(line)]
    env = dict(env)
    while words and re.match(r"^[A-Z_]+=", words[0]):
        key, value = words.pop(0).split("=", 1)
        if key not in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
            env[key] = value
    if words[:1] == ["python"] and words[1:3] == ["-m", "pytest"]:
        pytest.skip("the test suite does not run itself")
    assert words[0] == "reljudge", f"documented command is not a reljudge command: {line}"
    args = []
    for w in words[1:]:
        args += sorted(glob.glob(str(cwd / w))) if "*" in w else [w]
    return [str(Path(a).relative_to(cwd)) if a.startswith(str(cwd)) else a for a in args], env


def run_block(doc: Path, block: str, cwd: Path, env: dict, session: CommandSession,
              store_url: str | None = None) -> int:
    """Run one ```bash block's lines in order in ``session``; how many ran. ``store_url``: the
    URL an exported ``postgresql://`` RELJUDGE_STORE stands for."""
    ran = 0
    for line in commands(block):
        if line.endswith("python -m pytest -q"):
            continue  # the test suite itself (checked against .ci/run above)
        if line.startswith("export "):
            key, value = shlex.split(line[len("export "):])[0].split("=", 1)
            env[key] = store_url if value.startswith("postgresql://") else value
            continue
        proc = run_line(line, cwd, env, session)
        assert proc.returncode == 0, f"{doc.name}: {line}\n{proc.stderr[-3000:]}"
        assert "Traceback" not in proc.stderr
        ran += 1
    return ran


def needs_postgresql(block: str) -> bool:
    return re.search(r"^export \w+='?postgresql://", block, flags=re.M) is not None


def llm_env(server, tmp_path: Path) -> dict:
    return {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test",
            "OPENAI_MODEL": "fake-judge", "RELJUDGE_CACHE_DIR": str(tmp_path / "cache")}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.slow  # every documented command
def test_every_documented_command_runs(doc, scratch, tmp_path, session):
    if not blocks(doc, "bash") and not blocks(doc, "python"):
        return  # a page without commands (no server for nothing)
    with FakeOpenAI(grader) as server:
        env = llm_env(server, tmp_path)
        ran = 0
        for block in blocks(doc, "bash"):
            if not needs_postgresql(block):  # (test_the_team_section_runs_on_postgresql)
                ran += run_block(doc, block, scratch, env, session)
        for block in blocks(doc, "python"):
            proc = session.python(block, cwd=scratch, env=env)
            assert proc.returncode == 0, f"{doc.name}: python block\n{proc.stderr[-3000:]}"
            ran += 1
    assert ran > 0


def test_the_team_section_runs_on_postgresql(pg_server, session, tmp_path, monkeypatch,
                                            capsys):
    team = [b for b in blocks(TEAM_PAGE, "bash") if needs_postgresql(b)]
    assert len(team) == 1 and "## Working as a team" in TEAM_PAGE.read_text()
    shutil.copytree(ROOT / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("out"))
    url = pg_server.database("docs") + "?schema=hr_handbook"
    with FakeOpenAI(grader) as server:
        env = llm_env(server, tmp_path)
        assert run_block(TEAM_PAGE, team[0], tmp_path, env, session, url) == 5
        assert env["RELJUDGE_STORE"] == url
        labelled = server.calls
        assert labelled > 0
        # another machine, same job (in-process: what it sends is checked, not a process)
        args, again = shell_words(commands(team[0])[2], tmp_path, env)
        monkeypatch.chdir(tmp_path)
        for key, value in again.items():
            monkeypatch.setenv(key, value)
        assert args[0] == "label" and main(args) == 0, capsys.readouterr().err
        assert server.calls == labelled  # nothing sent twice
    from reljudge.store import LabelStore

    with LabelStore(url, create=False) as team_store, \
            LabelStore(tmp_path / "team-backup.sqlite", create=False) as backup:
        assert team_store.count() == backup.count() > 0
        assert {s.kind for s in team_store.sources()} == {"human", "llm"}
        assert {s.kind for s in backup.sources()} == {"human", "llm"}
        merged = team_store.merge("human-first").labels
    assert len((tmp_path / "team.qrels").read_text().splitlines()) == len(merged) > 0


def not_run_blocks(doc: Path) -> list[tuple[str, str]]:
    """The (test module, text) of each ```text block marked as not run."""
    return [(m.group(2), m.group(3)) for m in NOT_RUN.finditer(doc.read_text())]


@functools.cache
def help_text(verb: tuple[str, ...]) -> str:
    """What ``reljudge VERB --help`` prints ("" when it fails: no such command); in-process,
    the text being what is checked, not the process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([*verb, "--help"])
        except SystemExit as e:
            code = e.code
    return out.getvalue() if code in (0, None) else ""


def not_run_problems(doc: Path) -> list[str]:
    """What is wrong with the page's ```text blocks of commands: a block without a not-run
    marker, a marker naming no test module, a command or --flag its --help does not know."""
    shown = [b for b in blocks(doc, "text") if re.search(r"^\s*reljudge ", b, flags=re.M)]
    marked = not_run_blocks(doc)
    problems = [f"{doc.name}: a text block of commands has no not-run marker"
                for _ in range(len(shown) - len(marked))]
    helps: dict[tuple[str, ...], str] = {}
    for module, block in marked:
        if not (ROOT / "tests" / f"{module}.py").exists():
            problems.append(f"{doc.name}: the marker names tests/{module}.py, which is missing")
        for line in commands(block):
            if not line.startswith("reljudge "):
                continue
            words = shlex.split(line.split("#", 1)[0])[1:]
            if not words or words[0].endswith(":"):  # prose in a help text ("reljudge docs: ...")
                continue
            verb = tuple(words[:2]) if words[0] in ("labels", "batch") else (words[0],)
            if verb not in helps:
                helps[verb] = help_text(verb)
            flags = {w.split("=", 1)[0] for w in words if w.startswith("--")}
            problems += [f"{doc.name}: {' '.join(verb)} has no {f}: {line}"
                         for f in sorted(flags) if f not in helps[verb]]
            if not helps[verb]:
                problems.append(f"{doc.name}: no command {' '.join(verb)}: {line}")
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_not_run_is_marked_and_its_flags_exist(doc):
    """A ```text block with reljudge commands is not run: it must say so and name the test
    module that runs the same, and every --flag it shows must be in its command's --help."""
    assert not_run_problems(doc) == []


def test_the_not_run_check_finds_each_kind_of_problem(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: needs a server; tests/test_nowhere.py runs it -->\n"
                    "```text\nreljudge eval q r --no-such-flag\nreljudge frobnicate x\n```\n\n"
                    "```text\nreljudge pool r\n```\n")
    assert not_run_problems(page) == [
        "page.md: a text block of commands has no not-run marker",
        "page.md: the marker names tests/test_nowhere.py, which is missing",
        "page.md: eval has no --no-such-flag: reljudge eval q r --no-such-flag",
        "page.md: no command frobnicate: reljudge frobnicate x"]


@pytest.mark.slow  # the demo (the README runs it too; tests/project/test_wheel.py as a process)
def test_demo_runs_offline_and_prints_scores_and_audit(tmp_path, monkeypatch, capsys):
    for key in [k for k in os.environ if k.startswith("OPENAI_")]:
        monkeypatch.delenv(key)
    code = main(["demo", "--out-dir", str(tmp_path / "demo"), "--examples",
                 str(ROOT / "examples")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "nDCG@10" in out and "bm25" in out and "trigram" in out
    assert "Olz-gpt4o" in out and "kappa" in out and "ensemble-majority" in out
    assert "no LLM endpoint configured" in out and "OPENAI_API_KEY" in out
    assert (tmp_path / "demo" / "llmjudge-dl23" / "audit.md").exists()


def test_demo_refuses_to_wipe_a_folder_it_did_not_make(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    assert main(["demo", "--out-dir", str(tmp_path / "mine")]) == 2
    assert "was not made by `reljudge demo`" in capsys.readouterr().err
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "precious"


def test_each_guarantee_names_tests_that_exist():
    """The README's guarantees name the test modules that hold them; each one must exist."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## What reljudge guarantees", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`((?:\w+/)*test_\w+)`", section)
    assert len(named) >= 7
    assert [n for n in named if not (ROOT / "tests" / f"{n}.py").exists()] == []


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and mkdocs' toc make it."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower())


def broken_links(doc: Path) -> list[str]:
    """The page's relative links whose file, or whose #anchor in a .md file, does not exist."""
    prose = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md":
            text = re.sub(r"```.*?```", "", file.read_text(), flags=re.S)
            if anchor not in {slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}:
                broken.append(target)
    return broken


# --- the benchmark tables: written by bench/tables.py, never by hand -------------------------

BENCH_BLOCK = re.compile(r"<!-- bench: ([\w-]+) -->\n(.*?)<!-- /bench: \1 -->", flags=re.S)
MEASURED_ON = re.compile(r"Measured on .+, \d+ cores, Python \d+\.\d+\.\d+, load average "
                         r"[\d.]+; \d{4}-\d{2}-\d{2}, commit [0-9a-f]{7}(\+changes)?: "
                         r"`python bench/\w+\.py[^`]*`$")
#: what stands between a benchmark's markers until bench/tables.py first writes its table
NOT_MEASURED = re.compile(r"Not measured yet: `python bench/tables\.py ([\w-]+)` writes this "
                          r"table\.$")
#: a measured quantity: seconds, megabytes, a ratio
MEASURED = re.compile(r"\b\d+(?:\.\d+)?(?: ?(?:s|ms|MB|GB)\b|x\b)")


def bench_problems(text: str, page: str) -> list[str]:
    """What is wrong with a page's benchmark tables: a block of bench/tables.py's without its
    machine and date line or without a table, a block missing or unknown to it, and (on
    docs/benchmarks.md) a table or a measured number outside the blocks. A block whose one
    line says it is not measured yet, naming its own benchmark, holds no table yet."""
    from bench.tables import BENCHES

    problems, names = [], []
    for m in BENCH_BLOCK.finditer(text):
        name, lines = m.group(1), m.group(2).strip().splitlines()
        names.append(name)
        waiting = NOT_MEASURED.match(lines[0]) if len(lines) == 1 else None
        if waiting and waiting.group(1) == name:
            continue
        if not lines or not MEASURED_ON.match(lines[0]):
            problems.append(f"{name}: the table is not headed by its machine, date and commit")
        if not any(line.startswith("| ") for line in lines):
            problems.append(f"{name}: no table between the markers")
    expected = [n for n, (_, _, pages) in BENCHES.items() if page in pages]
    if sorted(names) != sorted(expected):
        problems.append(f"the blocks {sorted(names)} are not bench/tables.py's {expected}")
    if page == "docs/benchmarks.md":
        outside = re.sub(r"```.*?```", "", BENCH_BLOCK.sub("", text), flags=re.S)
        for line in outside.splitlines():
            if line.startswith("|"):
                problems.append(f"a table outside the markers: {line[:60]}")
            problems += [f"a measured number outside the markers: {n!r} in {line[:60]}"
                         for n in MEASURED.findall(line)]
    return problems


@pytest.mark.parametrize("page", ["docs/benchmarks.md", "README.md"])
def test_benchmark_tables_are_the_scripts_output_with_their_machine_and_date(page):
    """Every benchmark table is bench/tables.py's, between its markers, headed by the machine,
    the date and the commit; docs/benchmarks.md states no measured number outside them."""
    assert bench_problems((ROOT / page).read_text(), page) == []


def test_the_benchmark_check_finds_each_kind_of_problem():
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    block = BENCH_BLOCK.search(text)
    assert block
    headless = text.replace(block.group(2), "\n".join(block.group(2).splitlines()[1:]))
    by_hand = text + "\nOn the idle machine `eval` took 0.81 s (1.2x the script).\n"
    outside = text + "\n| command | s |\n|---|---|\n| eval | 3 |\n"
    gone = text.replace(block.group(0), "")
    assert any("not headed" in p for p in bench_problems(headless, "docs/benchmarks.md"))
    assert [p for p in bench_problems(by_hand, "docs/benchmarks.md") if "number" in p] == [
        "a measured number outside the markers: '0.81 s' in On the idle machine `eval` took "
        "0.81 s (1.2x the script).", "a measured number outside the markers: '1.2x' in On the "
        "idle machine `eval` took 0.81 s (1.2x the script)."]
    assert any("a table outside" in p for p in bench_problems(outside, "docs/benchmarks.md"))
    assert any("are not bench/tables.py's" in p for p in bench_problems(gone,
                                                                        "docs/benchmarks.md"))
    name = block.group(1)
    waiting = text.replace(block.group(2), f"Not measured yet: `python bench/tables.py {name}` "
                                           "writes this table.\n")
    assert bench_problems(waiting, "docs/benchmarks.md") == []
    assert any("not headed" in p for p in bench_problems(
        waiting.replace(f"tables.py {name}`", "tables.py other`"), "docs/benchmarks.md"))


def test_the_tables_runner_takes_the_table_and_writes_between_the_markers_only():
    """bench/tables.py takes a script's heading line and table (not its other output) and
    replaces what stands between one benchmark's markers, nothing else."""
    from bench.tables import block, merged, replace

    printed = ("1,000 pairs\nMeasured on X, 2 cores, Python 3.11.7, load average 1.0; 2026-01-01, "
               "commit abcdef0: `python bench/x.py --markdown`\ncaption\n\n| a |\n| --- |\n"
               "| 1 |\n\ntotal 3 s")
    table = block(printed)
    assert table == "\n".join(printed.splitlines()[1:7])
    page = ("intro\n<!-- bench: x -->\nold\n<!-- /bench: x -->\nmiddle\n"
            "<!-- bench: y -->\nkept\n<!-- /bench: y -->\nend\n")
    assert replace(page, "x", table) == page.replace("old", table)
    with pytest.raises(SystemExit, match="no markers"):
        replace(page, "z", table)
    assert block("no table here\n") is None
    assert merged(["s.py", "--repeat", "5"], ["--repeat", "1", "--runs", "4"]) == [
        "s.py", "--repeat", "1", "--runs", "4"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    """Links between README.md and docs/ (files and #anchors) lead somewhere, with or without
    mkdocs installed."""
    assert broken_links(doc) == []


def test_a_broken_link_or_anchor_is_found(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## Money, caching and failures\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n[a](other.md#money-caching-and-failures) [b](other.md#money)"
                    " [c](gone.md) [d](#page) [e](#nope) [f](https://example.org/x.md)\n")
    assert broken_links(page) == ["other.md#money", "gone.md", "#nope"]


def missing_names(text: str) -> list[str]:
    """The dotted ``reljudge.…`` names in backticks that do not import or resolve."""
    missing = []
    for name in sorted(set(re.findall(r"`(reljudge(?:\.\w+)+)", text))):
        parts, obj = name.split("."), None
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
                break
            except ImportError:
                continue
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
        if obj is None:
            missing.append(name)
    return missing


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_name_the_docs_give_exists(doc):
    """`reljudge.x.y` in the prose names a module or object that is there (a rename that
    forgets the docs fails here)."""
    assert missing_names(doc.read_text()) == []


def test_a_name_that_is_gone_is_found():
    assert missing_names("`reljudge.evaluate`, `reljudge.io.trec.read_qrels`, "
                         "`reljudge.nowhere.thing`, `reljudge.io.no_reader`") == [
        "reljudge.io.no_reader", "reljudge.nowhere.thing"]


def build_site(root: Path, site: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of the docs under ``root`` into ``site``."""
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(root / "mkdocs.yml"), "-d", str(site)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # two mkdocs builds
def test_the_docs_site_builds_strict_and_a_broken_link_fails_it(tmp_path):
    """mkdocs.yml's site builds with --strict (every link and anchor resolves); the same build
    of a copy with one broken anchor fails, so the check can fail."""
    proc = build_site(ROOT, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "measures" / "index.html").exists()
    nav = re.findall(r":\s+(\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), flags=re.M)
    assert sorted(nav) == sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    page = copy / "docs" / "index.md"
    page.write_text(page.read_text() + "\nSee [nowhere](measures.md#no-such-section).\n")
    broken = build_site(copy, tmp_path / "broken")
    assert broken.returncode != 0 and "no-such-section" in broken.stderr


SCRIPTED = re.compile(r"<!-- not run: the server runs until Ctrl-C; tests/docs/test_pages\.py[^\n]*-->"
                      r"\n```text\n(.*?)```", flags=re.S)


@pytest.mark.parametrize("doc", [ROOT / "README.md", ROOT / "docs" / "labelling.md"],
                         ids=lambda p: p.name)
@pytest.mark.slow  # a server process
def test_labelling_without_a_key_runs_as_documented(doc, scratch, tmp_path, monkeypatch,
                                                    capsys):
    """The scripted server started as the page says (a process: its command line is what is
    documented) prints its URL, and the page's label command, with that URL for PORT and no
    OPENAI_* variable, grades every pair (in-process: the library reads the environment when
    the command runs, not at start-up)."""
    (block,) = SCRIPTED.findall(doc.read_text())
    serve, label = commands(block)
    words = shlex.split(serve)
    assert words[:3] == ["python", "-m", "reljudge.testing.fake_openai"]
    for key in [k for k in os.environ if k.startswith("OPENAI_")]:
        monkeypatch.delenv(key)
    server = subprocess.Popen([sys.executable, *words[1:]], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", url), url
        args, env = shell_words(label.replace("http://127.0.0.1:PORT/v1", url), scratch,
                                {**os.environ, "RELJUDGE_CACHE_DIR": str(tmp_path / "cache")})
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(scratch)
        try:
            code = main(args)
        except SystemExit as e:  # argparse's refusal: its message is on stderr
            code = e.code
    finally:
        server.terminate()
        _, said = server.communicate(timeout=30)
    assert code == 0, capsys.readouterr().err[-3000:]
    assert said == ""  # no warning of runpy's (the module ran once)
    from reljudge.store import LabelStore

    with LabelStore(scratch / "try.sqlite", create=False, readonly=True) as store:
        grades = {e.grade for e in store.events() if e.source_kind == "llm"}
    assert grades == {2}
