"""`gemini -p` as ptysup's supervisor: read-only flags, and what the judge gets from
ptysup's private directory: a policy that leaves it only the reading tools, and a home of
its own, so its calls leave nothing in yours.

Observed with Gemini CLI 0.61 (issue 30):
- `--approval-mode plan` alone is not read-only: plan mode denies tools at the lowest
  policy tier (default, priority 1.040), and an `allow` of the person's
  (`~/.gemini/policies/*.toml`, user tier 4.x; `tools.allowed` in settings, 4.3; a
  trusted MCP server, 4.2) wins over it: the judge ran `touch` and wrote into the project.
  An admin-tier policy (`--admin-policy`, tier 5) wins over every one of them, the
  project's own `.gemini/policies` (workspace tier, 3) included; Gemini CLI ignores it
  only where the machine has system policies (`/etc/gemini-cli/policies`), so the same
  file is given as the user tier too (`--policy`, which replaces the person's user
  policies for the call: their `allow`s do not apply to it). A denied tool is not even
  offered to the model.
- Each call saves its session (`<home>/.gemini/tmp/<project>/chats/session-*.jsonl`) and
  has no switch against it: the judge runs with `GEMINI_CLI_HOME` pointing at a home of
  its own, whose `.gemini` links every entry of the person's (settings, sign-in, memory,
  extensions) but the ones a call writes (`tmp`, `history`, `projects.json`) and the
  person's policies (replaced above). It is removed with the run's private directory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ptysup.agents.gemini import home
from ptysup.agents.oneshot import JudgeOptions, OneShot, chose_tools, has, runs, with_prompt

POLICY_FILE = "gemini-judge-policy.toml"
# Gemini CLI 0.61's tools that only read the project.
READ_TOOLS = ("read_file", "list_directory", "glob", "grep_search")
# What a call writes into its home: kept in the judge's own. The policies are replaced.
_NOT_LINKED = frozenset({"tmp", "history", "projects.json", "policies"})

POLICY = f"""\
# ptysup's supervisor (`gemini -p`) reads and searches the project, and does nothing else:
# every other tool is denied, whatever another policy or setting allows.
[[rule]]
toolName = [{", ".join(f'"{tool}"' for tool in READ_TOOLS)}]
decision = "allow"
priority = 999

[[rule]]
toolName = "*"
decision = "deny"
priority = 998
denyMessage = "ptysup's supervisor only reads and searches the project."
"""


def policy_path(private: Path) -> Path:
    """Where the judge's policy is, in the run's PRIVATE directory."""
    return private / POLICY_FILE


def home_path(private: Path) -> Path:
    """The judge's GEMINI_CLI_HOME, in the run's PRIVATE directory."""
    return private / home.HOME_DIR


def write(private: Path, env: Mapping[str, str]) -> None:
    """Write the judge's policy and make its home in PRIVATE (a 0700 directory of the
    run's), linking the person's Gemini CLI folder's entries (ENV names it)."""
    path = policy_path(private)
    path.write_text(POLICY, encoding="utf-8")
    path.chmod(0o600)
    home.make(private, env, unlinked=_NOT_LINKED)


def is_gemini(argv: Sequence[str]) -> bool:
    """Whether a command is Gemini CLI (its executable is named gemini), agent or judge."""
    return runs(argv, "gemini")


def lean(out: list[str], options: JudgeOptions) -> list[str]:
    """A `gemini -p` judge (Gemini CLI 0.61): read-only (`--approval-mode plan`, and a
    policy that leaves it only the reading tools, whatever the person's policies and
    settings allow: see above), and trusting the folder for this call only, as headless
    Gemini CLI refuses an untrusted folder ("not running in a trusted directory", exit 55)."""
    out = with_prompt(out)
    chose = chose_tools(out, "--policy", "--admin-policy")
    if not has(out, "--approval-mode", "-y", "--yolo"):
        out += ["--approval-mode", "plan"]
    if options.private is not None and not chose:
        policy = str(policy_path(options.private))
        out += ["--admin-policy", policy, "--policy", policy]
    if not has(out, "--skip-trust"):
        out.append("--skip-trust")
    if options.model and not has(out, "--model", "-m"):
        out += ["--model", options.model]
    return out


def judge_env(argv: Sequence[str], env: Mapping[str, str], private: Path | None) -> dict[str, str]:
    """No relaunch: Gemini CLI 0.61 otherwise starts itself again as a child, which
    outlives a SIGKILLed ptysup (only the first process dies with it) and waits for its
    model's answer; one process also starts faster. With a PRIVATE directory, the judge
    runs in the home made there, so its sessions stay out of yours."""
    out = dict(env)
    out["GEMINI_CLI_NO_RELAUNCH"] = "true"
    if private is not None:
        out["GEMINI_CLI_HOME"] = str(home_path(private))
    return out


# `gemini -p` takes the prompt as -p's value: an empty one, then the prompt on stdin.
JUDGE = OneShot(("gemini", "-p", ""), is_gemini, lean, env=judge_env, prepare=write)
