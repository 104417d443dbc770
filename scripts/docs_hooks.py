"""The docs site's reference tables, made from the code at every build (mkdocs.yml `hooks:`),
so they cannot drift from it: a page holds a marker such as `<!-- ptysup:run-options -->`
and the build puts the table there. `python scripts/docs_hooks.py NAME` prints one table.

What the code cannot say (what an exit code or an event means, in a sentence) is written on
the pages by hand; tests/unit/test_docs.py holds those tables to the code."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator

import click

from ptysup.argspec import ArgSpec
from ptysup.cli.completion import spec_of
from ptysup.cli.help import GROUPS
from ptysup.cli.options import ENV_PREFIX, SUBCOMMANDS, _command
from ptysup.exitcodes import ExitCode, Outcome

MARKER = re.compile(r"<!-- ptysup:([a-z-]+) -->")


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _default(param: click.Parameter) -> str:
    if isinstance(param, click.Option) and param.secondary_opts:
        on, off = param.opts[0], param.secondary_opts[0]
        return _code(on if param.default else off)
    if param.default is None or param.default is False:
        return ""
    value = param.default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return _code(str(value))


def _help(param: click.Parameter, ctx: click.Context) -> tuple[str, str]:
    """The option as `--help` shows it, and its help text without the default."""
    record = param.get_help_record(ctx)
    flags, text = record if record is not None else (param.human_readable_name, "")
    # click ends the text with "  [default: 50; x>=1]": the default has its own column.
    text, bracket, extra = text.rpartition("  [")
    if not bracket:
        return flags, extra
    bounds = [part for part in extra[:-1].split("; ") if not part.startswith("default: ")]
    return flags, text + "".join(f" (`{b}`)" for b in bounds)


def _row(param: click.Parameter, ctx: click.Context, name: str) -> str:
    flags, text = _help(param, ctx)
    # --version and --help act at once: no variable sets them, nothing defaults.
    acts = name in ("version", "help")
    variable = "" if acts else _code(f"{ENV_PREFIX}_{name.upper()}")
    default = "" if acts else _default(param)
    return f"| {_cell(_code(flags))} | {variable} | {_cell(default)} | {_cell(text)} |"


def run_options() -> str:
    """Every option of `ptysup TASK`, in the groups of `ptysup --help` (TASK, the one
    argument, has no help text of click's: the page describes it)."""
    command = _command()
    ctx = click.Context(command, info_name="ptysup", **command.context_settings)
    help_option = command.get_help_option(ctx)
    helps = help_option.name if help_option is not None else None
    params = {
        "help" if p.name == helps else p.name: p
        for p in command.get_params(ctx)
        if p.name and isinstance(p, click.Option)
    }
    head = ["| option | variable | default | what |", "|---|---|---|---|"]
    out: list[str] = []
    groups = [*GROUPS, ("Other options", tuple(n for n in params if n not in _grouped()))]
    for title, names in groups:
        rows = [_row(params[n], ctx, n) for n in names if n in params]
        if rows:
            out += [f"### {title}", "", *head, *rows, ""]
    return "\n".join(out)


def _grouped() -> set[str]:
    return {name for _, names in GROUPS for name in names}


def _takes(spec: ArgSpec) -> Iterator[str]:
    for flag in spec.flags:
        yield _code(flag)
    for name, value in spec.options.items():
        shown = "|".join(value) if isinstance(value, tuple) else value.upper()
        yield _code(f"{name} {shown}")
    for arg in spec.args:
        yield _code("|".join(arg) if isinstance(arg, tuple) else arg.upper())
    if spec.run_options:
        but = ", ".join(map(_code, sorted(spec.not_run_options)))
        yield "a run's options" + (f" (but {but})" if but else "")


def _subcommand_rows(prefix: str, spec: ArgSpec) -> Iterator[str]:
    yield f"| `{prefix}` | {', '.join(_takes(spec)) or 'nothing'} |"
    for name, sub in spec.subcommands.items():
        yield from _subcommand_rows(f"{prefix} {name}", sub)


def subcommands() -> str:
    """What each subcommand takes, from the declarations shell completion uses."""
    out = ["| command | takes |", "|---|---|"]
    for name in sorted(SUBCOMMANDS):
        out += _subcommand_rows(f"ptysup {name}", spec_of(name))
    return "\n".join(out) + "\n"


def exit_codes() -> str:
    """Every exit code and the outcomes (`run_end.outcome`) that end with it."""
    out = ["| code | name | outcomes |", "|---|---|---|"]
    for code in ExitCode:
        outcomes = [o.value for o in Outcome if o is not Outcome.SIGNAL and o.exit_code() == code]
        out.append(f"| {int(code)} | `{code.name}` | {', '.join(map(_code, outcomes))} |")
    out.append(f"| 128+N | (signal N) | `{Outcome.SIGNAL.value}` |")
    return "\n".join(out) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "run-options": run_options,
    "subcommands": subcommands,
    "exit-codes": exit_codes,
}


def expand(markdown: str) -> str:
    """MARKDOWN with every marker replaced by its table; an unknown marker is an error."""

    def table(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in TABLES:
            raise ValueError(f"unknown docs marker <!-- ptysup:{name} -->")
        return TABLES[name]()

    return MARKER.sub(table, markdown)


def on_page_markdown(markdown: str, **_: object) -> str:
    """mkdocs hook: a page's markdown, its markers expanded."""
    return expand(markdown)


if __name__ == "__main__":
    print(TABLES[sys.argv[1]]())
