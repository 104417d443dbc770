"""The private CODEX_HOME: the config that points Codex at the fake model."""

from __future__ import annotations

import sys
from pathlib import Path

from ptysup.testing.kit import agent_env

if sys.version_info >= (3, 11):
    import tomllib
else:  # ptysup's own dependency there
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]


def test_config_points_at_the_fake_and_skips_first_run_screens(tmp_path: Path) -> None:
    project = tmp_path / 'pro"ject'
    with agent_env("codex", "http://127.0.0.1:9/", [project], tmp_path / "codex") as ce:
        config = tomllib.loads((ce.home / "config.toml").read_text())
        assert ce.env["CODEX_HOME"] == str(ce.home)
        assert ce.argv("exec") == [str(tmp_path / "codex"), "exec"]
    assert not ce.home.exists()
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == "http://127.0.0.1:9/v1"  # Codex POSTs {base_url}/responses
    assert provider["wire_api"] == "responses"
    assert provider["env_key"] == "FAKE_MODEL_API_KEY"
    assert provider["request_max_retries"] == 0 and provider["stream_max_retries"] == 0
    assert config["check_for_update_on_startup"] is False
    assert config["features"] == {"shell_snapshot": False}
    assert config["projects"] == {str(project.resolve()): {"trust_level": "trusted"}}
    assert "hooks" not in config  # ptysup adds its hooks per run, on the command line
