"""The judge's settings: JudgeConfig's errors (ConfigError, named as Python or as flags) and
the one function through which the library reads the environment."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from reljudge.cli import main
from reljudge.errors import ConfigError
from reljudge.judge import JudgeConfig
from reljudge.judge.config import ENVIRONMENT, default_cache_dir, endpoint_from_env, environment
from reljudge.judge.http.endpoints import resolve_endpoints

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "hr-handbook"


def test_judge_config_from_python_raises_config_error_naming_the_keyword():
    with pytest.raises(ConfigError) as got:
        JudgeConfig(model="m", max_cost=-1, concurrency=0)
    said = str(got.value)
    assert said.startswith("invalid judge settings: ")
    assert "max_cost: " in said and "concurrency: " in said
    assert "--" not in said  # no command-line flag is named to a Python caller
    assert isinstance(got.value, ValueError)  # as pydantic's ValidationError was


def test_judge_config_cross_field_errors_name_fields_from_python_and_flags_from_the_cli():
    both = dict(model="m", base_url="http://a/v1", endpoints=[{"url": "http://b/v1"}])
    with pytest.raises(ConfigError) as py:
        JudgeConfig(**both)
    assert str(py.value) == ("invalid judge settings: give the endpoint once: base_url, or "
                             "several endpoints (endpoints), not both")
    with pytest.raises(ConfigError) as cli:
        JudgeConfig.from_env(**both)  # the command line's way in
    assert str(cli.value) == ("invalid judge settings: give the endpoint once: --base-url, "
                              "or several endpoints (--base-url repeated or --endpoints), not "
                              "both")


def test_the_cli_names_the_flag(tmp_path, monkeypatch, capsys):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(var, raising=False)
    for name in ("queries.tsv", "passages.jsonl"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    shutil.copy(EXAMPLE / "runs" / "bm25.run", tmp_path / "a.run")
    code = main(["label", "--queries", str(tmp_path / "queries.tsv"), "--passages",
                 str(tmp_path / "passages.jsonl"), str(tmp_path / "a.run"),
                 "--model", "m", "--base-url", "http://127.0.0.1:1/v1", "--max-cost", "-1",
                 "--store", str(tmp_path / "s.sqlite")])
    err = capsys.readouterr().err
    assert code == 2
    assert "invalid judge settings: --max-cost: " in err
    assert not (tmp_path / "s.sqlite").exists()


def test_environment_is_the_documented_variables_set_and_not_empty(monkeypatch):
    for var in ENVIRONMENT:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_MODEL", "gpt-x")
    monkeypatch.setenv("OPENAI_BASE_URL", "")  # empty counts as unset
    monkeypatch.setenv("SOME_OTHER_VARIABLE", "x")
    monkeypatch.setenv("MY_KEY", "sk-1")
    assert environment() == {"OPENAI_MODEL": "gpt-x"}
    assert environment("MY_KEY") == {"OPENAI_MODEL": "gpt-x", "MY_KEY": "sk-1"}
    assert endpoint_from_env() == {"model": "gpt-x"}
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "RELJUDGE_CACHE_DIR"):
        assert var in ENVIRONMENT and var in (environment.__doc__ or "")


def test_cache_dir_and_endpoint_keys_come_through_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("RELJUDGE_CACHE_DIR", str(tmp_path / "answers"))
    assert default_cache_dir() == tmp_path / "answers"
    assert JudgeConfig(model="m").resolved_cache_dir() == tmp_path / "answers"
    monkeypatch.setenv("GPU_KEY", "sk-gpu")
    specs = resolve_endpoints(JudgeConfig(model="m", endpoints=[
        {"url": "http://127.0.0.1:1/v1", "api_key_env": "GPU_KEY"},
        {"url": "http://127.0.0.1:2/v1"}]))
    assert specs[0].api_key == "sk-gpu"
    monkeypatch.delenv("GPU_KEY")
    with pytest.raises(ConfigError, match="api_key_env names GPU_KEY, which is not set"):
        resolve_endpoints(JudgeConfig(model="m", endpoints=[
            {"url": "http://127.0.0.1:1/v1", "api_key_env": "GPU_KEY"}]))


def test_the_library_reads_the_environment_only_through_environment():
    src = ROOT / "src" / "reljudge"
    readers = re.compile(r"os\.environ|getenv\(")
    found = [f"{p.relative_to(src)}:{i}" for p in sorted(src.rglob("*.py"))
             if p.parts[len(src.parts)] not in ("cli", "testing")
             for i, line in enumerate(p.read_text().splitlines(), 1) if readers.search(line)]
    assert found == ["judge/config.py:" + str(_line_of_environment_read())]


def _line_of_environment_read() -> int:
    text = (ROOT / "src" / "reljudge" / "judge" / "config.py").read_text().splitlines()
    return next(i for i, line in enumerate(text, 1) if "os.environ" in line)
