"""Only agents/ knows agents: no module outside ptysup/agents/ names one in its code (an
identifier, an import, a string), so adding an agent is its folder and a registry row.
Comments and docstrings may still cite the agent a behaviour was seen with."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from ptysup.agents import registry

PACKAGE = Path(registry.__file__).resolve().parents[1]
# The agent-neutral part of ptysup: everything but the agents' package.
EXEMPT = ("agents",)
# --agent's help lists every name (test_agent_registry holds it to the registry): the
# command line loads the registry, and with it every profile, only when it needs it.
HELP_NAMES = ("codex", "gemini", "qwen", "opencode", "aider")
# Where an agent is still named, and why (Claude Code: ptysup's default agent and
# supervisor). Each entry must still be found (a stale one fails), so the list only shrinks.
STILL_NAMED = {
    ("config.py", "claude"): "the default --agent-cmd and --supervisor-cmd",
    ("cli/options.py", "claude"): "the default --agent-cmd and --supervisor-cmd, their help",
    **{("cli/options.py", name): "--agent's help" for name in HELP_NAMES},
    ("cli/commandline.py", "claude"): "PTYSUP_CLAUDE_BIN, the demo's Claude Code",
    ("engines/ci.py", "claude"): "`ptysup ci claude-config`, from the test kit's home",
    ("judgebench/command.py", "claude"): "judge-bench's default judge",
    ("testing/demo.py", "claude"): "the demo's default agent and supervisor",
    **{
        ("testing/demo.py", name): "the demo's --agent: its commands, scenario"
        for name in HELP_NAMES
    },
    # The fake model speaks each agent's API, as the agent's requests name it.
    ("testing/wires/__init__.py", "gemini"): "the Gemini API's wire",
    ("testing/wires/gemini.py", "gemini"): "the Gemini API's wire: its model names",
    ("testing/wires/anthropic.py", "claude"): "Claude Code's session header, the model name",
    ("testing/wires/responses.py", "codex"): "Codex's request metadata header",
}


def _agents() -> tuple[str, ...]:
    return tuple(name for name in registry.NAMES if name != registry.GENERIC)


def _docstrings(tree: ast.Module) -> set[int]:
    nodes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, nodes)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _words(node: ast.AST, docstrings: set[int]) -> tuple[str, ...]:
    """What a node names in code: identifiers, imported modules, strings (not docstrings)."""
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        return (node.attr,)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return (node.name,)
    if isinstance(node, ast.arg):
        return (node.arg,)
    if isinstance(node, ast.keyword):
        return (node.arg or "",)
    if isinstance(node, ast.alias):
        return (node.name, node.asname or "")
    if isinstance(node, ast.ImportFrom):
        return (node.module or "",)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return () if id(node) in docstrings else (node.value,)
    return ()


def named(source: str, agents: tuple[str, ...]) -> Iterator[tuple[int, str]]:
    """(line, agent) for every place SOURCE's code names one of AGENTS (`is_codex`,
    `"gemini"`, `agents.qwen`: a name between non-letters, in any case)."""
    pattern = re.compile(rf"(?<![a-z])({'|'.join(agents)})(?![a-z])", re.IGNORECASE)
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        for word in _words(node, docstrings):
            for found in pattern.finditer(word):
                yield getattr(node, "lineno", 0), found.group(1).lower()


def test_the_scan_sees_code_and_not_comments_or_docstrings() -> None:
    source = '''"""Seen with Codex."""
import ptysup.agents.qwen  # gemini in a comment
def is_opencode(argv): return argv == ["aider"]
'''
    assert sorted(named(source, _agents())) == [(2, "qwen"), (3, "aider"), (3, "opencode")]


def test_no_module_outside_agents_names_an_agent() -> None:
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in EXEMPT:
            continue
        for line, agent in named(path.read_text(encoding="utf-8"), _agents()):
            found.setdefault((relative.as_posix(), agent), []).append(line)
    unexpected = {key: lines for key, lines in found.items() if key not in STILL_NAMED}
    assert not unexpected, f"agent knowledge outside ptysup/agents/ (move it): {unexpected}"
    assert set(STILL_NAMED) <= set(found), f"no longer named: {set(STILL_NAMED) - set(found)}"
