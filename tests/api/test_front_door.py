"""The front door: ``import reljudge`` gives every call a notebook needs, each one line away,
and stays light (the LLM client, pyarrow and scipy load only when used)."""

from __future__ import annotations

import subprocess
import sys

import reljudge


def test_every_public_name_resolves_to_the_object_of_its_home():
    import importlib

    for name in reljudge.__all__:
        value = getattr(reljudge, name)
        if name in reljudge._LAZY:
            module, attr = reljudge._LAZY[name]
            assert value is getattr(importlib.import_module(module), attr)
    assert sorted(reljudge._LAZY) == sorted(n for n in reljudge.__all__ if n in reljudge._LAZY)
    assert set(reljudge.__all__) - set(reljudge._LAZY) == {
        "ConfigError", "GRADE_MAX", "GRADE_MIN", "InputError", "LLMError", "MeasureError",
        "ReljudgeError", "StoreError", "__version__"}


def test_an_unknown_name_is_an_attribute_error():
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'evaluat'"):
        reljudge.evaluat  # noqa: B018


def test_import_reljudge_loads_no_heavy_dependency():
    code = ("import sys, reljudge, reljudge.audit; heavy = [m for m in ('openai', 'pyarrow', 'scipy', 'aiohttp', "
            "'rich') if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_errors_share_one_root():
    for name in ("ConfigError", "InputError", "LLMError", "MeasureError", "StoreError"):
        assert issubclass(getattr(reljudge, name), reljudge.ReljudgeError)


def test_audit_stays_the_function_after_the_subpackage_is_imported():
    import reljudge.audit.systems  # noqa: F401  (importing a subpackage must not hide the call)

    assert callable(reljudge.audit) and reljudge.audit.__name__ == "audit"


def test_front_door_names_agree_with_their_homes_but_for_two_aliases():
    renamed = {name: attr for name, (_, attr) in reljudge._LAZY.items() if name != attr}
    assert renamed == {"draw_sample": "draw", "calibrate": "calibrate_judge"}
    assert reljudge._LAZY["estimate"] == ("reljudge.infer.scores", "estimate")


def test_one_call_reads_a_label_file_of_any_format(tmp_path):
    import reljudge.io

    assert reljudge.read_judge is reljudge.io.read_judge
    (tmp_path / "j.jsonl").write_text('{"query_id": "q1", "doc_id": "d1", "relevance": 2}\n')
    (tmp_path / "j.qrels").write_text("q1 0 d1 2\n")
    assert reljudge.read_judge(tmp_path / "j.jsonl")[0].to_dict() == \
        reljudge.read_judge(tmp_path / "j.qrels")[0].to_dict() == \
        reljudge.read_qrels(tmp_path / "j.qrels").to_dict() == {"q1": {"d1": 2}}


def test_a_run_written_through_the_front_door_reads_back_the_same(tmp_path):
    run = reljudge.as_run({"q1": {"d1": 2.5, "d2": 1.0}, "q2": {"d3": 0.5}})
    reljudge.write_run(run, tmp_path / "r.run", tag="mine")
    lines = (tmp_path / "r.run").read_text().splitlines()
    assert lines[0] == "q1 Q0 d1 1 2.5 mine"
    assert reljudge.read_run(tmp_path / "r.run").to_dict() == run.to_dict()


def test_named_choices_are_literal_types_in_the_front_doors_signatures():
    """A user's type checker sees the values a parameter takes (``choices``' Literal aliases),
    and the tuples the runtime checks and ``--help`` read are those aliases' values."""
    import typing

    from reljudge import choices as c

    hints = {name: typing.get_type_hints(getattr(reljudge, name))
             for name in ("evaluate", "compare", "draw_sample")}
    assert hints["evaluate"]["compat"] == c.Compat
    assert (hints["compare"]["test"], hints["compare"]["correction"],
            hints["compare"]["ci_method"]) == (c.Test, c.Correction, c.CiMethod)
    assert hints["draw_sample"]["design"] == c.Design
    for alias, values in ((c.Compat, c.COMPAT), (c.Kind, c.KINDS), (c.Design, c.DESIGNS),
                          (c.DerivedVote, c.DERIVED), (c.Order, c.ORDERS), (c.Test, c.TESTS),
                          (c.Correction, c.CORRECTIONS), (c.CiMethod, c.CI_METHODS),
                          (c.Aggregate, c.AGGREGATES)):
        assert typing.get_args(alias) == values and typing.get_origin(alias) is typing.Literal
