"""The run stays readable: no function in ptysup/run/ grows past a screenful (80 lines)."""

from __future__ import annotations

import ast
from pathlib import Path

from ptysup import run

RUN = Path(run.__file__).resolve().parent
PACKAGE = RUN.parent
LONGEST = 80  # lines, from `def` to the last line of the body (decorators not counted)


def _too_long(tree: ast.Module) -> list[tuple[str, int, int]]:
    """(name, first line, length) of each function, nested and methods included, over
    LONGEST lines."""
    return [
        (node.name, node.lineno, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > LONGEST
    ]


def test_no_function_in_the_run_is_longer_than_a_screenful() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line} {name} is {length} lines"
        for path in sorted(RUN.rglob("*.py"))
        for name, line, length in _too_long(ast.parse(path.read_text(), str(path)))
    ]
    assert found == [], f"split these (at most {LONGEST} lines each): {found}"


def test_the_measure_sees_a_long_function() -> None:
    # The test above would pass on a measure that found nothing: this one must find it.
    body = "\n".join(f"    x{i} = {i}" for i in range(LONGEST))
    tree = ast.parse(f"class C:\n  def long(self) -> None:\n{body}\n")
    assert _too_long(tree) == [("long", 2, LONGEST + 1)]
