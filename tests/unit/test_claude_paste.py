"""Newer Claude Code's pasted-text wrapper: taken off in its hook and in the fake's reading."""

from __future__ import annotations

from typing import Any

from ptysup.agents.claude.paste import unwrap_pastes
from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.events import HookEvent
from ptysup.agents.person import Person
from ptysup.testing.conversation import human_text

INSTRUCTION = "Step one.\nStep two.\n\n  Step four, indented."
# The text block Claude Code 2.1.332 sent the model for that instruction, typed by ptysup
# as one paste (recorded from the fake model's log); its hook's `prompt` is the same.
WRAPPED = (
    '\n\n<pasted_content id="e56f">\nStep one.\nStep two.\n\n  Step four, indented.\n'
    '</pasted_content id="e56f">\n'
)


def _recorded_request() -> dict[str, Any]:
    """The messages of that recorded request, the long texts cut short."""
    return {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "multi"}]},
            {"role": "system", "content": [{"type": "text", "text": "# Environment"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": WRAPPED, "cache_control": {"type": "ephemeral"}}
                ],
            },
        ]
    }


def test_a_wrapped_paste_reads_as_the_pasted_text() -> None:
    assert unwrap_pastes(WRAPPED) == INSTRUCTION


def test_typed_text_and_several_pastes_keep_their_order() -> None:
    text = (
        'look:\n\n<pasted_content id="1">\na\nb\n</pasted_content id="1">\n'
        '<pasted_content id="2">\nc\n</pasted_content id="2">\n'
    )
    assert unwrap_pastes(text) == "look:\n\na\nb\nc"


def test_text_without_a_whole_wrapper_is_left_as_is() -> None:
    for text in (
        "\n  plain, indented\n",
        'a <pasted_content id="1">\nnever closed',
        '<pasted_content id="1">\nclosed by another\n</pasted_content id="2">',
    ):
        assert unwrap_pastes(text) == text


def test_the_fake_model_reads_the_wrapped_message_as_the_pinned_release_sends_it() -> None:
    assert human_text(_recorded_request()) == INSTRUCTION


def test_a_wrapped_prompt_ptysup_typed_is_not_taken_for_the_persons() -> None:
    hook = ClaudeProfile().hook(HookEvent("UserPromptSubmit", {"prompt": WRAPPED, "x": 1}, 2.0))
    assert hook is not None and hook.payload == {"prompt": INSTRUCTION, "x": 1}
    person = Person(present=True)
    person.ptysup_types(INSTRUCTION)
    assert person.submitted(hook.payload["prompt"]) is False
    assert person.prompts == 0
    # Without the translation the wrapper's tags made it a stranger's prompt.
    person.ptysup_types(INSTRUCTION)
    assert person.submitted(WRAPPED) is True


def test_other_hooks_pass_through_untouched() -> None:
    stop = HookEvent("Stop", {"prompt": WRAPPED}, 1.0)
    plain = HookEvent("UserPromptSubmit", {"prompt": "fix it"}, 1.0)
    profile = ClaudeProfile()
    assert profile.hook(stop) is stop and profile.hook(plain) is plain
