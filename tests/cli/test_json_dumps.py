"""tables.json_dumps, the JSON every --json/--format json prints: byte for byte json.dumps
(indent 2, not ASCII-escaped) of the cleaned values, written in one pass."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.tables import _clean, json_dumps

LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(allow_nan=True, allow_infinity=True, width=32).map(np.float64),
    st.integers(-2 ** 63, 2 ** 63 - 1).map(np.int64), st.booleans().map(np.bool_))
KEYS = st.one_of(st.text(), st.integers(), st.booleans(), st.none())
VALUES = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(KEYS, inner, max_size=4)), max_leaves=30)


@settings(max_examples=150, deadline=None)
@given(VALUES)
def test_json_dumps_is_json_dumps_of_the_cleaned_values_byte_for_byte(value):
    assert json_dumps(value) == json.dumps(_clean(value), indent=2, ensure_ascii=False) + "\n"


def test_a_value_json_does_not_know_is_refused_as_json_refuses_it():
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_dumps({"a": [1, object()]})
