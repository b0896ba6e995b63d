"""The pre-commit side of the gate: the hook's id and hints, and the pushed commit checked out in
a temporary git worktree (``checked_out``) with paths moved between it and the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from evalret.errors import EvalretError

HOOK_ID = "evalret-gate"


# what exit 3 adds: the failure is evalret's, not the change's, and how to push past it once
SKIP_HINT = (
    f"{HOOK_ID}: evalret itself failed (exit 3), so this is no verdict on your change. Fix the "
    f"cause above, or push once without the gate: SKIP={HOOK_ID} git push"
)


INPUT_HINT = f"{HOOK_ID}: an input is wrong (exit 2): fix what the error above names, then push"


def git(root: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_INDEX_FILE", "GIT_WORK_TREE")}
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=False
        )
    except OSError as e:
        raise EvalretError(f"cannot run git: {e.strerror or e}") from None
    if done.returncode != 0:
        raise EvalretError(f"git {' '.join(args)} failed: {done.stderr.strip()[:500]}")
    return done.stdout.strip()


def git_root() -> Path:
    return Path(git(Path.cwd(), "rev-parse", "--show-toplevel")).resolve()


@contextmanager
def checked_out(root: Path, commit: str) -> Iterator[Path]:
    """A temporary, detached git worktree of ``commit``, removed afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="evalret-hook-")).resolve()
    tree = scratch / "tree"
    try:
        git(root, "worktree", "add", "--detach", "--quiet", str(tree), commit)
        yield tree
    finally:
        if tree.exists():
            with suppress(EvalretError):  # pruned below; the directory goes either way
                git(root, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(scratch, ignore_errors=True)
        with suppress(EvalretError):
            git(root, "worktree", "prune")


def moved_into(path: Path | None, root: Path, tree: Path) -> Path | None:
    """``path`` of the checkout as the same path in ``tree``; None when it lies outside it."""
    if path is None:
        return None
    try:
        return tree / path.resolve().relative_to(root)
    except ValueError:
        return None


def moved_back(path: Path | None, tree: Path, root: Path) -> Path | None:
    """A path inside ``tree`` as the same path in the checkout (kept when outside ``tree``)."""
    if path is None:
        return None
    try:
        return root / path.relative_to(tree)
    except ValueError:
        return path


def shown(path: Path, tree: Path | None = None) -> Path:
    """``path`` relative to the working directory (the repository's root, where pre-commit runs
    hooks), or to the pushed commit's worktree ``tree``, when it lies inside it, else as it
    is."""
    for base in (tree, Path.cwd()):
        if base is None:
            continue
        try:
            return path.resolve().relative_to(base.resolve())
        except (ValueError, OSError):
            continue
    return path
