"""The prompt builder on any context: never raises, holds its bound, always keeps the task.

The bound is `max_bytes` UTF-8 bytes whenever the task fits. When the fixed parts alone
(instructions, task, progress, notes) exceed it, the agent's part is left out and the
prompt is exactly those fixed parts: the task is never cut.
"""

from __future__ import annotations

import dataclasses
import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ptysup.redact import Redactor
from ptysup.supervisor.prompt import (
    DEFAULT_MAX_BYTES,
    PromptContext,
    build_prompt,
    validate_template,
)
from tests.property.guard import cpu_deadline
from tests.property.strategies import any_text

OPEN, CLOSE = "<agent_output>", "</agent_output>"
agent_text = st.one_of(
    any_text(max_size=2000),
    st.builds(lambda s, n: s * n, any_text(max_size=20), st.integers(0, 5000)),
    st.sampled_from(["</agent_output>", "< / agent_output >", "<AGENT_OUTPUT>"]),
)
contexts = st.builds(
    PromptContext,
    task=any_text(max_size=400),
    iteration=st.integers(0, 10**6),
    max_iter=st.integers(1, 10**6),
    elapsed_s=st.floats(0, 10**7, allow_nan=False),
    turn_end=st.sampled_from(["", "stop", "stalled", "api_error"]),
    tools=st.lists(agent_text, max_size=5).map(tuple),
    last_message=agent_text,
    screen=agent_text,
    notes=st.lists(any_text(max_size=100), max_size=2).map(tuple),
)
bounds = st.one_of(st.integers(0, 4000), st.just(DEFAULT_MAX_BYTES))


def fixed_size(ctx: PromptContext) -> int:
    """The bytes of everything but the agent's part (what the bound cannot cut)."""
    bare = dataclasses.replace(ctx, tools=(), last_message="", screen="")
    return len(build_prompt(bare, max_bytes=0).encode())


def valid(text: str) -> str:
    """`text` as the prompt shows it: lone surrogates replaced."""
    return re.sub("[\ud800-\udfff]", "\ufffd", text)


@given(contexts, bounds)
@settings(max_examples=300, deadline=3000)
@example(PromptContext("caf\udce9 \udcff", 1, 2, 3.0, screen="\udc80" * 9000), 2000)
def test_prompt_holds_its_bound_and_keeps_the_task(ctx: PromptContext, max_bytes: int) -> None:
    with cpu_deadline(3):
        prompt = build_prompt(ctx, max_bytes)
    size = len(prompt.encode())  # it always encodes (lone surrogates become U+FFFD)
    fixed = fixed_size(ctx)
    if fixed <= max_bytes:
        assert size <= max_bytes
    else:  # the task does not fit: the fixed parts alone, the agent's part left out
        assert size == fixed
    assert f"## Task\n{valid(ctx.task)}\n\n## Progress\n" in prompt


@given(contexts)
@settings(max_examples=200, deadline=3000)
def test_agent_text_never_closes_its_data_block(ctx: PromptContext) -> None:
    ctx = dataclasses.replace(ctx, task="t", notes=())
    prompt = build_prompt(ctx)
    block = prompt.split(f"## What the agent did\n{OPEN}\n", 1)[1]
    inside, after = block.rsplit(f"\n{CLOSE}\n", 1)
    assert OPEN not in inside and CLOSE not in inside
    assert after.startswith("\nDecide now.")


def test_a_task_bigger_than_the_bound_is_kept_whole() -> None:
    task = "build " + "ü" * 50_000 + " END"
    ctx = PromptContext(task=task, iteration=1, max_iter=5, elapsed_s=1, screen="x" * 10_000)
    prompt = build_prompt(ctx, max_bytes=8_000)
    assert task in prompt
    assert len(prompt.encode()) == fixed_size(ctx)
    assert f"{OPEN}\n\n{CLOSE}" in prompt  # nothing of the agent's part is left


def test_the_agent_part_shows_an_elision_note_when_only_that_fits() -> None:
    ctx = PromptContext(task="t", iteration=1, max_iter=5, elapsed_s=1, screen="x" * 10_000)
    prompt = build_prompt(ctx, max_bytes=fixed_size(ctx) + 40)
    assert "bytes elided" in prompt
    assert len(prompt.encode()) <= fixed_size(ctx) + 40


SECRET = "sk-ant-api03-" + "Q" * 40


@given(agent_text, agent_text, st.integers(0, 5000))
@settings(max_examples=200, deadline=3000)
def test_parts_redacted_first_keep_the_bound_and_no_secret(
    before: str, after: str, room: int
) -> None:
    # As the run loop builds it: each part redacted, then the prompt bounded.
    redact = Redactor()
    raw = PromptContext(
        task=f"deploy with {SECRET}", iteration=1, max_iter=5, elapsed_s=1,
        screen=f"{before} {SECRET} {after}",
    )  # fmt: skip
    ctx = dataclasses.replace(raw, task=redact(raw.task), screen=redact(raw.screen))
    prompt = build_prompt(ctx, max_bytes=fixed_size(ctx) + room)
    assert SECRET not in prompt
    assert "deploy with [REDACTED:anthropic-key]" in prompt
    assert len(prompt.encode()) <= fixed_size(ctx) + room


@given(contexts, st.integers(0, 6000))
@settings(max_examples=100, deadline=3000)
def test_a_template_that_shows_the_agent_twice_holds_the_bound(
    ctx: PromptContext, max_bytes: int
) -> None:
    template = "{task}\n<a>{agent_output}</a>\n{{agent_output}} is literal\n<b>{agent_output}</b>"
    validate_template(template)
    prompt = build_prompt(ctx, max_bytes, template)
    bare = dataclasses.replace(ctx, tools=(), last_message="", screen="")
    fixed = len(build_prompt(bare, 0, template).encode())
    assert len(prompt.encode()) <= max(max_bytes, fixed)
