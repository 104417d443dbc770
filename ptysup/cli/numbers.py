"""Numeric option values, refused in a person's words: "'abc' is not a whole number",
"0 is too small: the least is 1", where click says "'abc' is not a valid integer range" and
"0 is not in the range x>=1". The range still shows in --help (`[x>=1]`)."""

from __future__ import annotations

from typing import Any

import click


def _too_small(value: Any, low: float, open_: bool) -> str:
    bound = f"{low:g}"
    return f"{value} is too small: " + (
        f"it must be more than {bound}" if open_ else f"the least is {bound}"
    )


class WholeNumber(click.IntRange):
    """A whole number of at least `min`."""

    name = "whole number"

    def __init__(self, least: int) -> None:
        super().__init__(min=least)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            try:
                number = int(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a whole number", param, ctx)
        if self.min is not None and number < self.min:
            self.fail(_too_small(value, self.min, False), param, ctx)
        return number


class Number(click.FloatRange):
    """A number of at least `min` (more than `min` with `above`)."""

    name = "number"

    def __init__(self, least: float, above: bool = False) -> None:
        super().__init__(min=least, min_open=above)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = float(value) if isinstance(value, (int, float)) else float(str(value).strip())
        except ValueError:
            self.fail(f"{value!r} is not a number", param, ctx)
        low = self.min if self.min is not None else float("-inf")
        if number < low or (self.min_open and number == low):
            self.fail(_too_small(value, low, self.min_open), param, ctx)
        return number
