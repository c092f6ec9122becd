"""The pipeline's [judge] section: generated from JudgeConfig on a typed base, so checked code
reads its fields with the types the generated class validates."""

from __future__ import annotations

import typing

from reljudge.judge import JudgeConfig
from reljudge.pipeline.config import JudgeSection, JudgeSettings


def test_the_generated_judge_section_is_its_typed_base_with_judge_configs_fields():
    assert issubclass(JudgeSection, JudgeSettings) and JudgeSection is not JudgeSettings
    for name, base in JudgeSettings.model_fields.items():
        generated = JudgeSection.model_fields[name].annotation
        if name == "enabled":
            assert generated is bool
            continue
        expected = JudgeConfig.model_fields[name].annotation
        assert generated == (str | None if name == "model" else expected), name
        # every value the generated field accepts is one the base's type admits
        if typing.get_origin(generated) is typing.Literal:
            assert all(isinstance(v, base.annotation) for v in typing.get_args(generated))
        else:
            assert base.annotation == generated, name


def test_the_judge_section_still_validates_as_judge_config_does():
    import pydantic
    import pytest

    assert JudgeSection(aggregate="mean").aggregate == "mean"
    with pytest.raises(pydantic.ValidationError):
        JudgeSection(aggregate="loudest")  # JudgeConfig's choices, not the base's str
