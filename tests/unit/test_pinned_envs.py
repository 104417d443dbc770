"""What every pinned agent's test kit does alike: an environment without the outer
account, the pinned-binary lookup and version, and the command line's errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from ptysup.agents.aider import testkit as aider_kit
from ptysup.agents.claude import testkit as claude_kit
from ptysup.agents.codex import testkit as codex_kit
from ptysup.agents.gemini import testkit as gemini_kit
from ptysup.agents.qwen import testkit as qwen_kit
from ptysup.testing import kit, pins
from ptysup.testing.pins import PINS, Pin, pin

URL = "http://127.0.0.1:9"
AIDER = pin("aider")
NPM_PINS = [p for p in PINS if not p.pip]

MakeEnv = Callable[[Path, Path, Mapping[str, str]], dict[str, str]]


@pytest.mark.parametrize(
    ("make_env", "outer", "own"),
    [
        pytest.param(
            lambda home, binary, outer: claude_kit.make_env(URL, home, binary, base=outer),
            {
                "ANTHROPIC_AUTH_TOKEN": "real",
                "ANTHROPIC_MODEL": "opus",
                "CLAUDECODE": "1",
                "CLAUDE_CODE_USE_BEDROCK": "1",
            },
            lambda home: {
                "ANTHROPIC_BASE_URL": URL,
                "ANTHROPIC_API_KEY": "sk-ant-test",
                "CLAUDE_CONFIG_DIR": str(home),
                "DISABLE_TELEMETRY": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "CLAUDE_CODE_MAX_RETRIES": "0",
            },
            id="claude",
        ),
        pytest.param(
            lambda home, binary, outer: gemini_kit.make_env(URL, home, binary, base=outer),
            {
                "GEMINI_API_KEY": "real",
                "GOOGLE_CLOUD_PROJECT": "prod",
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH": "/etc/gemini.json",
            },
            lambda home: {
                "GOOGLE_GEMINI_BASE_URL": URL,
                "GEMINI_API_KEY": "fake-gemini-key",
                "GEMINI_CLI_HOME": str(home),
            },
            id="gemini",
        ),
        pytest.param(
            lambda home, binary, outer: codex_kit.make_env(home, binary, base=outer),
            {
                "OPENAI_API_KEY": "real",
                "OPENAI_BASE_URL": "https://api.openai.com/v1",
                "CODEX_HOME": "/home/x/.codex",
            },
            lambda home: {"CODEX_HOME": str(home), "FAKE_MODEL_API_KEY": "sk-fake-codex"},
            id="codex",
        ),
        pytest.param(
            lambda home, binary, outer: qwen_kit.make_env(URL, home, binary, base=outer),
            {
                "OPENAI_API_KEY": "real",
                "OPENAI_BASE_URL": "https://api.openai.com/v1",
                "QWEN_CODE_SYSTEM_SETTINGS_PATH": "/etc/qwen.json",
                "DASHSCOPE_API_KEY": "real",
            },
            lambda home: {
                "OPENAI_BASE_URL": f"{URL}/v1",
                "OPENAI_API_KEY": "sk-fake-qwen",
                "OPENAI_MODEL": "fake-model",
                "HOME": str(home),
                "QWEN_HOME": str(home / ".qwen"),
            },
            id="qwen",
        ),
        pytest.param(
            lambda home, binary, outer: aider_kit.make_env(URL, home, binary, base=outer),
            {
                "AIDER_YES_ALWAYS": "true",
                "OPENAI_API_KEY": "real",
                "OPENROUTER_API_KEY": "real",
            },
            lambda home: {
                "AIDER_MODEL": "openai/fake-model",
                "AIDER_OPENAI_API_BASE": f"{URL}/v1",
                "AIDER_OPENAI_API_KEY": "sk-fake-aider",
                "AIDER_EDIT_FORMAT": "diff",
                "HOME": str(home),
            },
            id="aider",
        ),
    ],
)
def test_env_replaces_the_outer_account_and_endpoint_and_puts_the_binary_first(
    tmp_path: Path,
    make_env: MakeEnv,
    outer: Mapping[str, str],
    own: Callable[[Path], dict[str, str]],
) -> None:
    binary = tmp_path / "bin" / "agent"
    env = make_env(tmp_path, binary, {"PATH": "/usr/bin", "HOME": "/home/x", **outer})
    assert env == {"PATH": f"{tmp_path / 'bin'}:/usr/bin", "HOME": "/home/x", **own(tmp_path)}


@pytest.mark.parametrize("pin", PINS, ids=lambda p: p.name)
def test_find_prefers_the_configured_binary_then_the_pinned_install(
    monkeypatch: pytest.MonkeyPatch, pin: Pin
) -> None:
    monkeypatch.setenv(pin.bin_env, "/opt/agent")
    assert pin.find() == Path("/opt/agent")
    monkeypatch.delenv(pin.bin_env)
    if pin.local_bin().exists():
        assert pin.find() == pin.local_bin()


@pytest.mark.parametrize("pin", NPM_PINS, ids=lambda p: p.name)
def test_the_installed_version_is_read_from_its_package_json(tmp_path: Path, pin: Pin) -> None:
    assert pin.installed_version(tmp_path) is None
    package = tmp_path / "node_modules" / pin.package
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"version": pin.version}))
    assert pin.installed_version(tmp_path) == pin.version
    assert pin.local_bin(tmp_path) == tmp_path / "node_modules" / ".bin" / pin.bin_name
    assert pin.prefix.name == pin.folder and pin.prefix.parent.name == ".tools"


@pytest.mark.parametrize("pin", PINS, ids=lambda p: p.name)
def test_path_says_how_to_install_when_there_is_no_binary(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], pin: Pin
) -> None:
    monkeypatch.setenv(pin.bin_env, "/nonexistent/agent")  # found nowhere
    assert kit.main([pin.name, "path"]) == 1
    install = f"python -m ptysup.testing.kit {pin.name} install"
    label = kit.offline_home(pin.name).label
    assert capsys.readouterr().err == f"ptysup: {label} not found; run `{install}`\n"


@pytest.mark.parametrize("pin", PINS, ids=lambda p: p.name)
def test_env_without_a_url_is_a_usage_error(capsys: pytest.CaptureFixture[str], pin: Pin) -> None:
    assert kit.main([pin.name, "env"]) == 2
    assert capsys.readouterr().err == "ptysup: env needs --url (the fake model's base URL)\n"


def test_a_pypi_pins_version_is_read_from_its_dist_info(tmp_path: Path) -> None:
    assert AIDER.installed_version(tmp_path) is None
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    (site / "aider_chat-0.86.2.dist-info").mkdir(parents=True)
    (site / "aider_chat_helper-1.0.dist-info").mkdir()  # another package's
    assert AIDER.installed_version(tmp_path) == "0.86.2"
    assert AIDER.local_bin(tmp_path) == tmp_path / "bin" / "aider"


def test_a_pypi_pin_is_kept_by_version_in_the_cache_and_linked_from_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A clone finds the release another clone installed (CI's fresh clone, the second
    # time): linked, not installed again; a folder of its own in .tools/ is replaced.
    monkeypatch.setattr(pins, "TOOLS_DIR", tmp_path / "tools")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    kept = tmp_path / "cache" / "ptysup" / f"aider-{AIDER.version}"
    (kept / "bin").mkdir(parents=True)
    for name in ("aider", "python"):
        (kept / "bin" / name).touch()
    (kept / "lib" / "python3.11" / "site-packages" / f"aider_chat-{AIDER.version}.dist-info").mkdir(
        parents=True
    )
    (tmp_path / "tools" / "aider" / "bin").mkdir(parents=True)  # an older install's

    def no_install(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"installed again: {args}")

    monkeypatch.setattr(subprocess, "run", no_install)
    binary = AIDER.install()
    link = tmp_path / "tools" / "aider"
    assert link.is_symlink() and link.resolve() == kept.resolve()
    assert binary.resolve() == (kept / "bin" / "aider").resolve()
    assert AIDER.installed_version() == AIDER.version
    assert AIDER.install().resolve() == binary.resolve()  # again: nothing to do


def test_a_pypi_pin_runs_on_a_python_it_supports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "version_info", (3, 12, 1))
    assert AIDER._python() == sys.executable  # the one running, when it is supported
    monkeypatch.setattr(sys, "version_info", (3, 13, 0))
    found = {"python3.11": "/usr/bin/python3.11"}
    monkeypatch.setattr(shutil, "which", found.get)
    assert AIDER._python() == "/usr/bin/python3.11"
    found.clear()
    with pytest.raises(FileNotFoundError, match=r"needs a Python below 3\.13"):
        AIDER._python()
