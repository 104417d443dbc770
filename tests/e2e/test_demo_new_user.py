"""The README's first command as a new user runs it: `scripts/demo.sh` in a fresh clone,
not root, with Python and npm but none of the test tools (no tmux, htop, Chromium,
ShellCheck, apt-get). It installs ptysup's wheel alone (as `pip install .` does; no test
tool in its venv), runs that, and the demo ends in [COMPLETE], exit 0, output piped as in
CI."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ptysup.testing.pins import pin
from tests.helpers import fresh_copy, run_group

pytestmark = pytest.mark.e2e

# What only the tests need, left off the new user's PATH.
TEST_TOOLS = frozenset(
    {"tmux", "htop", "less", "vim", "chromium", "shellcheck", "apt-get", "apt", "sudo"}
)
TEST_MODULES = ("pytest", "hypothesis", "mypy", "playwright", "zizmor", "apprise", "mkdocs")
BIN_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


def _need_root() -> None:
    message = "creating a user needs root (useradd)"
    if os.geteuid() == 0 and shutil.which("useradd") and shutil.which("setpriv"):
        return
    if os.environ.get("PTYSUP_REQUIRE_E2E") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def new_user() -> Iterator[pwd.struct_passwd]:
    """A local user made for this test (with a home), removed afterwards."""
    _need_root()
    name = f"ptdemo{secrets.token_hex(4)}"
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)


def _path_without_test_tools(bin_dir: Path) -> str:
    """A PATH of one folder: every command of the system's but the test tools."""
    bin_dir.mkdir()
    for folder in map(Path, BIN_DIRS):
        for entry in folder.iterdir() if folder.is_dir() else ():
            link = bin_dir / entry.name
            if entry.name not in TEST_TOOLS and not link.exists() and not link.is_symlink():
                link.symlink_to(entry)
    return str(bin_dir)


def _with_pinned_claude(clone: Path, user: pwd.struct_passwd) -> None:
    """The pinned Claude Code the suite's setup installed, in the clone's .tools (hard
    links where they can be): setup.sh then finds it, not npm's ~100 MB download."""
    claude = pin("claude")
    source = claude.prefix
    if claude.installed_version(source) != claude.version:
        pytest.fail(f"the pinned Claude Code is not under {source}: run scripts/setup.sh")
    target = clone / ".tools" / "claude-code"
    target.parent.mkdir()
    os.chown(target.parent, user.pw_uid, user.pw_gid)  # .tools is the user's, as in a clone
    if subprocess.run(["cp", "-al", str(source), str(target)], check=False).returncode:
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run(["cp", "-a", str(source), str(target)], check=True)


def test_the_demo_runs_for_a_new_user_with_python_and_npm_only(
    new_user: pwd.struct_passwd,
) -> None:
    top = Path(tempfile.mkdtemp(prefix="ptysup-newuser-"))
    try:
        os.chmod(top, 0o755)
        clone = fresh_copy(top / "clone")
        (top / "tmp").mkdir()
        subprocess.run(
            ["chown", "-R", f"{new_user.pw_uid}:{new_user.pw_gid}", str(clone), str(top / "tmp")],
            check=True,
        )
        _with_pinned_claude(clone, new_user)  # root's, readable: the user installs nothing
        env = {
            "HOME": new_user.pw_dir,
            "USER": new_user.pw_name,
            "LOGNAME": new_user.pw_name,
            "PATH": _path_without_test_tools(top / "bin"),
            "LANG": "C.UTF-8",
            "TMPDIR": str(top / "tmp"),
        }
        user = [f"--reuid={new_user.pw_uid}", f"--regid={new_user.pw_gid}", "--clear-groups"]
        run = run_group(
            ["setpriv", *user, "bash", "scripts/demo.sh"], cwd=clone, env=env, timeout=900
        )
        assert run.returncode == 0, run.stderr[-3000:]
        assert "outcome=complete" in run.stdout, run.stdout[-3000:]
        assert "setup: ready" in run.stderr and "apt-get" not in run.stderr
        shipped = clone / ".tools" / "ptysup" / "bin" / "python"
        found = subprocess.run(
            [
                str(shipped),
                "-I",
                "-c",
                "import importlib.util, sys, ptysup\n"
                "print(ptysup.__file__)\n"
                "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m)))",
                *TEST_MODULES,
            ],
            cwd=clone,
            capture_output=True,
            text=True,
            check=True,
        )
        package, tools = [*found.stdout.split("\n"), ""][:2]
        # What ran is what `pip install .` ships: the package from its wheel, in the
        # venv's site-packages, not this clone's folder, and not one test tool beside it.
        assert "/site-packages/ptysup/" in package and not package.startswith(str(clone / "ptysup"))
        assert tools.split() == []
        assert not (clone / ".venv").exists()
        assert (clone / ".tools" / "ptysup" / "bin" / "ptysup").exists()
        # The demo's last word is the next step: the same, offline, on their own project.
        assert run.stderr.splitlines()[-1].startswith("demo: next: scripts/demo.sh --project")
        _tour_of_own_project(top / "mine", clone, env, new_user)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _tour_of_own_project(
    mine: Path, clone: Path, env: dict[str, str], new_user: pwd.struct_passwd
) -> None:
    """`scripts/demo.sh --project MINE` as the new user: ptysup runs in their own git
    project, offline, and leaves every file of theirs as it was."""
    (mine / "tests").mkdir(parents=True)
    (mine / "README.md").write_text("# Mine\n")
    (mine / "tests" / "test_mine.py").write_text("def test_mine() -> None:\n    pass\n")
    git = [
        "git",
        "-C",
        str(mine),
        "-c",
        "safe.directory=*",
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
    ]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "mine"], check=True)
    subprocess.run(["chown", "-R", f"{new_user.pw_uid}:{new_user.pw_gid}", str(mine)], check=True)
    user = [f"--reuid={new_user.pw_uid}", f"--regid={new_user.pw_gid}", "--clear-groups"]
    before = {p: p.read_bytes() for p in mine.rglob("*") if p.is_file() and ".git" not in p.parts}
    run = run_group(
        ["setpriv", *user, "bash", "scripts/demo.sh", "--project", str(mine)],
        cwd=clone,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "outcome=complete" in run.stdout, run.stdout[-3000:]
    assert "PostToolUse Read" in run.stdout  # the agent looked at their README
    after = {
        p: p.read_bytes()
        for p in mine.rglob("*")
        if p.is_file() and ".git" not in p.parts and ".ptysup" not in p.parts
    }
    assert after == before
    status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""  # the run's own folder is ignored by git
    assert list(mine.glob(".ptysup/runs/*/events.jsonl"))
