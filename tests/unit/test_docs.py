"""The docs say what the code does: the hand-written reference tables name every option,
exit code, event and subcommand the code has, and nothing it lacks; the tables the site
generates come out of the code whole; the README stays a front door."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import click
import pytest

from ptysup.cli.options import SUBCOMMANDS, _command
from ptysup.exitcodes import ExitCode, Outcome

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "scripts/docs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table(page: str, header: str) -> list[list[str]]:
    """The rows (cells stripped) of the markdown table under HEADER on PAGE."""
    lines = (DOCS / page).read_text().splitlines()
    start = lines.index(header) + 2  # past the header and its |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def _params() -> dict[str, click.Parameter]:
    return {p.name: p for p in _command().params if p.name}


def test_the_options_page_describes_every_run_option_and_no_other() -> None:
    flags = {"TASK": "task"}
    for name, param in _params().items():
        for flag in [*param.opts, *param.secondary_opts]:
            flags[flag] = name
    described = set()
    for first, *_ in _table("reference/options.md", "| option | default | meaning |"):
        named = re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*|TASK)", first)
        assert named, first
        for flag in named:
            assert flag in flags, f"docs/reference/options.md describes {flag}, no option"
            described.add(flags[flag])
    assert described == set(_params())


def test_the_generated_options_table_has_every_option_with_its_variable() -> None:
    table = _hooks().expand("<!-- ptysup:run-options -->")
    for name, param in _params().items():
        if isinstance(param, click.Argument):
            continue  # TASK: no help text of click's, described by hand
        variable = "" if name == "version" else f"`PTYSUP_{name.upper()}`"
        row = rf"\| `[^`]*{re.escape(param.opts[-1])}\b[^`]*` \| {variable} \|"
        assert re.search(row, table), name
    assert "| `--max-iter WHOLE NUMBER` | `PTYSUP_MAX_ITER` | `50` |" in table


def test_the_exit_codes_page_matches_the_code() -> None:
    rows = _table("reference/exit-codes.md", "| code | outcome (`run_end.outcome`) | meaning |")
    documented = {code: set(re.findall(r"`(\w+)`", outcomes)) for code, outcomes, _ in rows}
    by_code = [(o.exit_code(), o.value) for o in Outcome if o is not Outcome.SIGNAL]
    expected = {str(int(c)): {value for n, value in by_code if n == c} for c in ExitCode}
    expected["128+N"] = {Outcome.SIGNAL.value}
    assert documented == expected


def test_the_generated_exit_codes_table_has_every_code() -> None:
    table = _hooks().expand("<!-- ptysup:exit-codes -->")
    for code in ExitCode:
        assert f"| {int(code)} | `{code.name}` |" in table


def _emitted() -> set[str]:
    """Every event name the code emits: `log.emit("name", …)` or `Event("name", …)`."""
    names = set()
    for path in (REPO / "ptysup").rglob("*.py"):
        names.update(re.findall(r'(?:emit|Event)\(\s*"([a-z_]+)"', path.read_text()))
    return names


def test_the_events_page_documents_every_event_the_code_emits() -> None:
    documented = {row[0].strip("`") for row in _table("reference/events.md", "| event | fields |")}
    assert _emitted() <= documented, _emitted() - documented
    code = "".join(p.read_text() for p in (REPO / "ptysup").rglob("*.py"))
    for name in documented - _emitted():  # named otherwise, e.g. a resumed run_start
        assert f'"{name}"' in code, f"docs/reference/events.md documents {name}, no event"


def test_the_event_scan_finds_the_events_it_is_meant_to() -> None:
    # The scan above is only as good as its pattern: it must see both ways of emitting.
    assert {"run_start", "run_end", "decision", "warning", "turn_end"} <= _emitted()


def test_the_commands_page_names_every_subcommand() -> None:
    rows = _table("reference/commands.md", "| command | does |")
    words = {re.match(r"`ptysup ([\w-]+)", first).group(1) for first, _ in rows[1:]}  # type: ignore[union-attr]
    assert set(SUBCOMMANDS) <= words
    generated = _hooks().expand("<!-- ptysup:subcommands -->")
    for name in SUBCOMMANDS:
        assert f"| `ptysup {name}` |" in generated


def test_every_marker_on_the_pages_is_one_the_build_knows() -> None:
    hooks = _hooks()
    for page in DOCS.rglob("*.md"):
        assert hooks.MARKER.search(hooks.expand(page.read_text())) is None, page
    with pytest.raises(ValueError, match="unknown docs marker"):
        hooks.expand("<!-- ptysup:no-such-table -->")


def test_every_page_is_in_the_sites_navigation() -> None:
    nav = (REPO / "mkdocs.yml").read_text()
    for page in DOCS.rglob("*.md"):
        assert f" {page.relative_to(DOCS).as_posix()}\n" in nav, page


def test_the_readme_is_read_in_minutes_and_keeps_its_two_commands() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 400
    assert "scripts/demo.sh     # " in readme and "scripts/test.sh     # " in readme


def test_the_readmes_links_into_the_docs_reach_a_page() -> None:
    readme = (REPO / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
    assert links
    for link in links:
        assert (REPO / link).is_file(), link


def test_the_performance_page_holds_the_table_as_the_bench_prints_it() -> None:
    # scripts/bench.py prints its results as this table: a new run replaces the page's.
    header = '"| measure | result | target | met |", "|---|---|---|---|"'
    assert header in (REPO / "scripts" / "bench.py").read_text()
    page = (DOCS / "performance.md").read_text()
    assert "| measure | result | target | met |\n|---|---|---|---|\n" in page


def test_the_readmes_agents_table_names_every_agent_at_its_pinned_release() -> None:
    from ptysup.agents import registry
    from ptysup.testing.pins import PINS

    readme = (REPO / "README.md").read_text()
    agents_page = (DOCS / "agents.md").read_text()
    for name in registry.NAMES[:-1]:  # the last row is any other program
        assert f"| `{name}` (" in readme, name
    for pin in PINS:
        assert f"`{pin.name}` (" in readme and f" {pin.version})" in readme, pin
        assert pin.version in agents_page, pin


def _examples(language: str) -> list[tuple[str, str]]:
    """Every fenced LANGUAGE example of the README and the docs: (where, text)."""
    found = []
    for page in [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = page.read_text()
        for match in re.finditer(rf"^```{language}\n(.*?)^```", text, re.M | re.S):
            line = text[: match.start()].count("\n") + 1
            found.append((f"{page.relative_to(REPO)}:{line}", match.group(1)))
    return found


@pytest.mark.parametrize(("where", "text"), _examples("yaml"), ids=lambda v: str(v)[:40])
def test_every_yaml_example_in_the_docs_is_valid_yaml(where: str, text: str) -> None:
    # A person copies these: docs/scaling-out.md's fix.yml once was no YAML at all.
    import yaml

    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        pytest.fail(f"{where}: {' '.join(str(exc).split())}")
    assert documents, where
