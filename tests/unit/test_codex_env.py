"""The private Codex CLI environment and the pinned-binary lookup."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ptysup.testing import codex_env
from ptysup.testing.codex_env import CODEX_VERSION, TOOLS_DIR
from ptysup.testing.pins import CODEX

if sys.version_info >= (3, 11):
    import tomllib
else:  # ptysup's own dependency there
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]


def test_env_replaces_outer_openai_and_codex_variables(tmp_path: Path) -> None:
    outer = {
        "PATH": "/usr/bin",
        "HOME": "/home/x",
        "OPENAI_API_KEY": "real",
        "OPENAI_BASE_URL": "https://api.openai.com/v1",
        "CODEX_HOME": "/home/x/.codex",
    }
    binary = tmp_path / "bin" / "codex"

    env = codex_env.make_env(tmp_path, binary, base=outer)

    assert env == {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin",
        "HOME": "/home/x",
        "CODEX_HOME": str(tmp_path),
        "FAKE_MODEL_API_KEY": "sk-fake-codex",
    }


def test_config_points_at_the_fake_and_skips_first_run_screens(tmp_path: Path) -> None:
    project = tmp_path / 'pro"ject'
    with codex_env.codex_env("http://127.0.0.1:9/", [project], tmp_path / "codex") as ce:
        config = tomllib.loads((ce.codex_home / "config.toml").read_text())
        assert ce.env["CODEX_HOME"] == str(ce.codex_home)
        assert ce.argv("exec") == [str(tmp_path / "codex"), "exec"]
    assert not ce.codex_home.exists()
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == "http://127.0.0.1:9/v1"  # Codex POSTs {base_url}/responses
    assert provider["wire_api"] == "responses"
    assert provider["env_key"] == "FAKE_MODEL_API_KEY"
    assert provider["request_max_retries"] == 0 and provider["stream_max_retries"] == 0
    assert config["check_for_update_on_startup"] is False
    assert config["features"] == {"shell_snapshot": False}
    assert config["projects"] == {str(project.resolve()): {"trust_level": "trusted"}}
    assert "hooks" not in config  # ptysup adds its hooks per run, on the command line


def test_find_codex_prefers_the_configured_binary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTYSUP_CODEX_BIN", "/opt/codex")
    assert codex_env.find_codex() == Path("/opt/codex")
    monkeypatch.delenv("PTYSUP_CODEX_BIN")
    local = CODEX.local_bin(TOOLS_DIR)
    if local.exists():
        assert codex_env.find_codex() == local


def test_pinned_version_is_read_from_package_json(tmp_path: Path) -> None:
    package = tmp_path / "node_modules" / "@openai" / "codex"
    package.mkdir(parents=True)
    assert CODEX.installed_version(tmp_path) is None
    (package / "package.json").write_text(json.dumps({"version": CODEX_VERSION}))
    assert CODEX.installed_version(tmp_path) == CODEX_VERSION
    assert CODEX.local_bin(tmp_path) == tmp_path / "node_modules" / ".bin" / "codex"
    assert TOOLS_DIR.name == "codex" and TOOLS_DIR.parent.name == ".tools"


def test_path_command_exits_1_without_codex(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(codex_env, "find_codex", lambda: None)
    assert codex_env.main(["path"]) == 1
    assert capsys.readouterr().err.startswith("ptysup: Codex CLI not found")


def test_env_command_needs_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert codex_env.main(["env"]) == 2
    assert capsys.readouterr().err.startswith("ptysup: env needs --url")
