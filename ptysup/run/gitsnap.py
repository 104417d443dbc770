"""Snapshots of a git work tree as tree objects in ptysup's own object store.

A snapshot is the whole work tree as it stands — tracked files and the untracked ones git
does not ignore, each with its content — written as a git tree with a private index and a
private object directory (the repository's own objects are read as alternates). Two
snapshots compare exactly (`git diff-tree`), whatever the agent did meanwhile (commits,
resets, stashes), and a file as it was at the start can be put back in a scratch copy.

Nothing of the person's repository is written: not the work tree, not its index, refs or
objects. ptysup's own files (its folder, --log-file, --record, --summary-json) and large
new untracked files are left out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ptysup.run.changes import Change, parse

GIT_TIMEOUT_S = 120.0  # a first snapshot of a big repository hashes every changed file
MAX_NEW_FILE = 50 * 1024 * 1024  # a larger untracked file is left out of the snapshots
# Folders of installed dependencies, ignored by git, that a check needs to run: a scratch
# copy links them rather than running without them (or copying them).
DEPENDENCY_DIRS = frozenset({"node_modules", ".venv", "venv", ".bundle"})
MAX_IGNORED_FILE = 1024 * 1024  # an ignored file (.env) a scratch copy gets a copy of
MAX_IGNORED = 500  # ignored entries looked at for a scratch copy
# What ptysup's own git commands must not do in the person's repository: run its
# file-system monitor, keep an untracked cache, split the index, collect garbage.
_QUIET = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "core.splitIndex=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
)


class GitError(Exception):
    """A git command failed: its words (one line)."""


@dataclass(frozen=True)
class Entry:
    """A file in a tree: its mode and its blob."""

    mode: str
    blob: str


class WorkTree:
    """A git work tree and ptysup's object store for its snapshots (`store`, a folder of
    the run's own)."""

    def __init__(self, top: Path, objects: Path, store: Path, exclude: Sequence[str]) -> None:
        self.top = top
        self._objects = objects  # the repository's object directory
        self._store = store
        self._exclude = tuple(exclude)  # paths relative to the top
        self._index = store / "index"

    @classmethod
    def find(cls, cwd: Path, store: Path, exclude: Sequence[Path] = ()) -> WorkTree | None:
        """The work tree `cwd` is in, or None when it is in none (or git is missing)."""
        top = _git_out(cwd, "rev-parse", "--show-toplevel")
        objects = _git_out(cwd, "rev-parse", "--git-path", "objects")
        if top is None or objects is None:
            return None
        root = Path(os.fsdecode(top.strip()))
        where = (cwd / os.fsdecode(objects.strip())).resolve()
        # Only what lies inside the work tree can be left out of it.
        inside = (_inside(root, cwd / p) for p in (*exclude, store))
        return cls(root, where, store, [rel for rel in inside if rel])

    @property
    def store(self) -> Path:
        """ptysup's folder for this run's snapshots."""
        return self._store

    def cwd(self, cwd: Path) -> str:
        """`cwd` relative to the top ("" for the top itself)."""
        rel = _inside(self.top, cwd)
        return rel or ""

    # -- snapshots ------------------------------------------------------------------
    def snapshot(self) -> str:
        """The work tree now, as a tree id in the store."""
        self._store.mkdir(parents=True, exist_ok=True)
        objects = self._store / "objects"
        objects.mkdir(exist_ok=True)
        if not self._index.exists():
            self._first_index()
        new = self._run(("ls-files", "-z", "--others", "--exclude-standard"), private=True)
        large = [p for p in _names(new) if _size(self.top / p) > MAX_NEW_FILE]
        # git refuses a pathspec that names an ignored path, even to leave it out.
        left_out = [*self._not_ignored(self._exclude), *large]
        specs = [".", *(f":(exclude,top,literal){p}" for p in left_out)]
        self._run(
            ("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"),
            private=True,
            stdin=b"\0".join(os.fsencode(s) for s in specs),
        )
        return self._run(("write-tree",), private=True).decode().strip()

    def _not_ignored(self, paths: Sequence[str]) -> list[str]:
        """Those of `paths` git does not ignore."""
        if not paths:
            return []
        try:
            done = subprocess.run(
                ("git", "check-ignore", "-z", "--stdin"),
                cwd=self.top,
                input=b"\0".join(os.fsencode(p) for p in paths),
                capture_output=True,
                env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GitError(f"git check-ignore: {exc}") from None
        if done.returncode not in (0, 1):  # 1: none of them is ignored
            raise GitError(done.stderr.decode(errors="replace").strip() or "git check-ignore")
        ignored = set(_names(done.stdout))
        return [p for p in paths if p not in ignored]

    def _first_index(self) -> None:
        """Start from a copy of the repository's index: its stat data spares hashing every
        tracked file again (an empty index otherwise: a new repository has none)."""
        real = _git_out(self.top, "rev-parse", "--git-path", "index")
        if real is None:
            return
        source = self.top / os.fsdecode(real.strip())
        try:
            shutil.copyfile(source, self._index)
        except OSError:
            self._index.unlink(missing_ok=True)

    def changes(self, old: str, new: str) -> list[Change]:
        """How the files of tree `new` differ from tree `old`."""
        if old == new:
            return []
        base = ("diff-tree", "-r", "-z", "--no-renames", old, new)
        return parse(
            self._run((*base, "--name-status"), private=True),
            self._run((*base, "--numstat"), private=True),
        )

    def entries(self, tree: str, paths: Collection[str] | None = None) -> dict[str, Entry]:
        """The files of `tree` (only `paths`, if given): path → mode and blob."""
        out = self._run(("ls-tree", "-r", "-z", "--full-tree", tree), private=True)
        found = {}
        for record in out.split(b"\0"):
            head, _, name = record.partition(b"\t")
            fields = head.split()
            if len(fields) == 3 and fields[1] == b"blob":
                path = name.decode("utf-8", errors="surrogateescape")
                if paths is None or path in paths:
                    found[path] = Entry(fields[0].decode(), fields[2].decode())
        return found

    def tracked(self) -> list[str]:
        """The files the repository's own index tracks now."""
        return _names(self._run(("ls-files", "-z")))

    def matching(self, pathspecs: Sequence[str], cwd: Path) -> list[str]:
        """The files (tracked, or untracked and not ignored) that `pathspecs` match, read
        as git reads them from `cwd`; relative to the top. GitError for a bad pathspec."""
        ls = ("ls-files", "-z", "--full-name", "--cached", "--others", "--exclude-standard")
        out = self._run((*ls, "--", *pathspecs), cwd=cwd)
        return sorted(set(_names(out)))

    def with_entries(self, tree: str, replace: Mapping[str, Entry]) -> str:
        """Tree `tree` with each of `replace`'s files as given."""
        scratch = self._store / "scratch-index"
        try:
            self._run(("read-tree", tree), index=scratch)
            lines = b"".join(
                f"{e.mode} {e.blob}\t".encode() + os.fsencode(p) + b"\0" for p, e in replace.items()
            )
            self._run(("update-index", "-z", "--index-info"), index=scratch, stdin=lines)
            return self._run(("write-tree",), index=scratch).decode().strip()
        finally:
            scratch.unlink(missing_ok=True)

    def checkout(self, tree: str, dest: Path) -> None:
        """Write the files of `tree` under `dest` (the work tree is not touched)."""
        scratch = self._store / "scratch-index"
        try:
            self._run(("read-tree", tree), index=scratch)
            self._run(("checkout-index", "-a", "-f", f"--prefix={dest}/"), index=scratch)
        finally:
            scratch.unlink(missing_ok=True)

    def ignored(self) -> list[str]:
        """Ignored files and folders (folders end in `/`), at most MAX_IGNORED, as git
        lists them: a folder ignored whole is one entry."""
        out = self._run(
            ("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
        )
        return [p for p in _names(out) if not self._excluded(p)][:MAX_IGNORED]

    def _excluded(self, path: str) -> bool:
        return any(path == e or path.startswith(e.rstrip("/") + "/") for e in self._exclude)

    # -- running git ----------------------------------------------------------------
    def _run(
        self,
        args: Sequence[str],
        *,
        private: bool = False,
        index: Path | None = None,
        stdin: bytes = b"",
        cwd: Path | None = None,
    ) -> bytes:
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
        if private or index is not None:
            env.update(
                GIT_INDEX_FILE=str(index or self._index),
                GIT_OBJECT_DIRECTORY=str(self._store / "objects"),
                GIT_ALTERNATE_OBJECT_DIRECTORIES=str(self._objects),
            )
        return _git(cwd or self.top, args, env, stdin, quiet=True)


def _git(
    cwd: Path, args: Sequence[str], env: Mapping[str, str], stdin: bytes = b"", quiet: bool = False
) -> bytes:
    try:
        done = subprocess.run(
            ("git", *(_QUIET * quiet), *args),
            cwd=cwd,
            input=stdin,
            capture_output=True,
            env=dict(env),
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} took more than {GIT_TIMEOUT_S:.0f}s") from None
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror or exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(said[-1] if said else f"git exited {done.returncode}")
    return done.stdout


def pathspec_problem(cwd: Path, pathspecs: Sequence[str]) -> str | None:
    """What git says against `pathspecs` read from `cwd` (a bad magic word, a path outside
    the repository), or None; None too outside a work tree, where nothing is protected."""
    if not pathspecs or _git_out(cwd, "rev-parse", "--is-inside-work-tree") is None:
        return None
    try:
        _git(cwd, ("ls-files", "-z", "--", *pathspecs), {**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except GitError as exc:
        return str(exc).removeprefix("fatal: ")
    return None


def _git_out(cwd: Path, *args: str) -> bytes | None:
    try:
        return _git(cwd, args, {**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except GitError:
        return None


def _names(out: bytes) -> list[str]:
    return [n.decode("utf-8", errors="surrogateescape") for n in out.split(b"\0") if n]


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def _within(root: Path, path: Path) -> bool:
    """Whether `path`, its links followed as far as they exist, lies under `root`."""
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError):
        return False
    return True


def _inside(root: Path, path: Path) -> str | None:
    """`path` relative to `root` with `/`, or None when it is outside ("" for the root)."""
    try:
        rel = path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return None
    return "" if rel == Path(".") else rel.as_posix()


def link_dependencies(tree: WorkTree, ignored: Iterable[str], dest: Path) -> None:
    """Give a scratch copy at `dest` what git ignores but a check needs: folders of
    installed dependencies are linked to the real ones, small ignored files (an `.env`)
    copied. Build output and caches are left out: a check makes them again."""
    root = dest.resolve()
    for entry in ignored:
        source = tree.top / entry.rstrip("/")
        target = dest / entry.rstrip("/")
        if not _within(root, target.parent):  # a link in the copy may lead out of it
            continue
        if entry.endswith("/"):
            if source.name not in DEPENDENCY_DIRS:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.symlink_to(source, target_is_directory=True)
        elif source.is_file() and not source.is_symlink() and _size(source) <= MAX_IGNORED_FILE:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
