"""Whatever a YAML file a person hands ptysup holds (a NUL, any control character, any
structure), reading it ends in its value or in one `FILE:LINE: problem`, never a
traceback."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ptysup.userfile import InputError, compose_yaml, construct
from tests.property.strategies import any_text

# YAML's own punctuation, so that documents with structure come up, not only text.
yaml_text = st.lists(
    st.sampled_from(["- ", ": ", "[", "]", "{", "}", ",", "&a ", "*a", "\n", "  ", "!!", "'"])
    | any_text(8),
    max_size=40,
).map("".join)


@given(yaml_text)
@settings(max_examples=500, deadline=None)
def test_any_yaml_text_is_a_value_or_one_line_saying_where(text: str) -> None:
    try:
        root = compose_yaml(text, "file.yaml")
    except InputError as exc:
        assert str(exc).startswith("file.yaml:") and "\n" not in str(exc)
        return
    if root is not None:
        construct(root)
