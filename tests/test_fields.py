"""common/fields.py's shortcut for plain strings gives the rules' own verdict, on any path."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olares_pack.common import fields

LOCS = [("title",), ("full_description",), ("changelog", 3, "notes"), ("engine", "args", 2), ("env", "A"),
        ("chart", "templates/x.yaml"), ("server", "extra_args", 1), ("locales", "zh", "title")]
# characters each rule looks at, and plain ones
ALPHABET = st.sampled_from(list("ab é{}%#") + ["\t", "\n", "\r", "\x00", "\x7f", "\x85", "\xa0", "\u2028", "\u3000"])


def _by_the_rules(text: str, loc: tuple) -> str | None:
    saved = fields._SUSPECT
    fields._SUSPECT = re.compile(r"[\s\S]")  # every string suspect: no shortcut
    try:
        return fields.string_problem(text, loc)
    finally:
        fields._SUSPECT = saved


@settings(max_examples=300, deadline=None)
@given(st.text(ALPHABET, max_size=12), st.sampled_from(LOCS))
def test_the_shortcut_agrees_with_the_rules(text: str, loc: tuple) -> None:
    assert fields.string_problem(text, loc) == _by_the_rules(text, loc)


@pytest.mark.parametrize("loc", LOCS)
def test_a_long_plain_string_is_still_measured(loc: tuple) -> None:
    text = "a" * (fields.MAX_TEXT + 1)
    assert fields.string_problem(text, loc) == _by_the_rules(text, loc)
    assert (fields.string_problem(text, loc) is None) == (loc[0] == "chart")
