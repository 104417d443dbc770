"""`ptysup completion bash|zsh|fish`: a shell completion script, and its answers: the
subcommands' names and the run's options first, then what the chosen subcommand takes."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import click
from click.shell_completion import CompletionItem, get_completion_class, shell_complete

from ptysup.argspec import ArgSpec, Value

COMPLETE_VAR = "_PTYSUP_COMPLETE"
SHELLS = ("bash", "zsh", "fish")
ARGS = ArgSpec(args=(SHELLS,))


def main(args: Sequence[str]) -> int:
    """Print the completion script for a shell; install with e.g.
    `eval "$(ptysup completion bash)"` in ~/.bashrc."""
    if len(args) != 1 or args[0] not in SHELLS:
        out = sys.stdout if args[:1] in (["-h"], ["--help"]) else sys.stderr
        print(f"usage: ptysup completion {{{','.join(SHELLS)}}}", file=out)
        return 0 if out is sys.stdout else 2
    cls = get_completion_class(args[0])
    assert cls is not None
    print(cls(command_tree(), {}, "ptysup", COMPLETE_VAR).source())
    return 0


def complete(env: Mapping[str, str]) -> int | None:
    """Answer the shell's completion request (the script sets _PTYSUP_COMPLETE), or None."""
    instruction = env.get(COMPLETE_VAR)
    if not instruction:
        return None
    os.environ.update(env)  # click reads COMP_WORDS etc. from the process environment
    return shell_complete(command_tree(), {}, "ptysup", COMPLETE_VAR, instruction)


def command_tree() -> click.Command:
    """ptysup as click sees it for completion: the run, and every subcommand, its module
    imported only once the command line reaches it."""
    from ptysup.cli.options import SUBCOMMANDS, _command

    return _Dispatch("ptysup", _command(), SUBCOMMANDS, lambda name: _built(name, spec_of(name)))


def spec_of(name: str) -> ArgSpec:
    """What subcommand NAME takes: ARGS in its module, next to its parser (help and
    version, in ptysup.cli.commandline, take a subcommand's name and nothing)."""
    from ptysup.cli.options import SUBCOMMANDS

    if name == "help":
        return ArgSpec(args=(tuple(SUBCOMMANDS),))
    if name == "version":
        return ArgSpec()
    module = importlib.import_module(SUBCOMMANDS[name].partition(":")[0])
    # A module of several subcommands names each one's spec in SPECS.
    spec = module.SPECS[name] if hasattr(module, "SPECS") else module.ARGS
    assert isinstance(spec, ArgSpec), name
    return spec


class _Dispatch(click.Group):
    """A first word that names a subcommand picks it; any other belongs to `default`
    (`ptysup TASK` but `ptysup replay`; `ptysup batch TASKS.yaml` but `ptysup batch plan`)."""

    def __init__(
        self,
        name: str,
        default: click.Command,
        names: Collection[str],
        build: Callable[[str], click.Command],
    ) -> None:
        super().__init__(name, add_help_option=False)
        self.default, self.names, self.build = default, names, build

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.args = list(args)  # all for the command the first word picks
        return ctx.args

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args[0] in self.names:
            return args[0], self.build(args[0]), args[1:]
        return ctx.info_name, self.default, args

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """The first word: `default`'s options, or its first argument and the names."""
        with self.default.make_context(
            ctx.info_name, [], parent=ctx, resilient_parsing=True
        ) as sub:
            items = self.default.shell_complete(sub, incomplete)
            arguments = [p for p in self.default.get_params(sub) if isinstance(p, click.Argument)]
            if arguments and not incomplete.startswith("-"):
                # Paths before names: bash's script empties its list at a path and falls
                # back on paths only when no name is in it.
                items = arguments[0].shell_complete(sub, incomplete) + items
        return items + [CompletionItem(name) for name in self.names if name.startswith(incomplete)]


def _built(name: str, spec: ArgSpec) -> click.Command:
    """A click command taking what `spec` declares (a run's options included)."""
    from ptysup.cli.options import option_params

    params: list[click.Parameter] = [click.Option([f], is_flag=True) for f in spec.flags]
    params += [click.Option([option], type=_type(v)) for option, v in spec.options.items()]
    params += [
        click.Argument([f"arg{i}"], type=_type(v), required=False) for i, v in enumerate(spec.args)
    ]
    if spec.run_options:
        mine = {*spec.flags, *spec.options, *spec.not_run_options}
        params += [
            p
            for p in option_params()
            if isinstance(p, click.Option) and not mine.intersection(p.opts)
        ]
    command = click.Command(
        name, params=params, context_settings={"help_option_names": ["-h", "--help"]}
    )
    if not spec.subcommands:
        return command
    subs = spec.subcommands
    return _Dispatch(name, command, subs, lambda word: _built(word, subs[word]))


def _type(value: Value) -> click.ParamType[Any, Any]:
    if isinstance(value, tuple):
        return click.Choice(value)
    if value == "file":
        return click.Path()
    return click.Path(file_okay=False) if value == "dir" else click.STRING
