"""The one writer of user files: never clobber a device, a pipe, a directory or a link; never
lose the old file; clean what killed writes left; fail with the path, exit 2.

Runs as root in CI, where file modes do not stop writes: unwritable places are made from what
root respects (a parent that is a regular file, an immutable directory via chattr +i), and
devices are private nodes made with mknod, never the system's /dev/null."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import pytest

from evalret.data.atomic import (
    AtomicFiles,
    append_line_durably,
    append_text,
    atomic_write,
    atomic_write_blocks,
    atomic_write_text,
    check_writable_dir,
    check_writable_file,
    cut_torn_tail,
    publish_dir,
    sha256_file,
    temp_dir_beside,
)
from evalret.errors import ExitCode, InputError


def private_null(tmp_path: Path) -> Path:
    """A character device like /dev/null (major 1, minor 3) inside tmp_path."""
    path = tmp_path / "null"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD)")
    return path


@contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``path`` made immutable with chattr +i: not even root can create files in it."""
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available on this file system")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_symlink_is_written_through_to_its_target(tmp_path: Path) -> None:
    """A symlinked file stays a link; its target gets the new content."""
    target = tmp_path / "real" / "baseline.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    atomic_write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "later" / "file.json")
    atomic_write_text(link, "x")
    assert link.is_symlink() and (tmp_path / "later" / "file.json").read_text() == "x"


WRITERS = {
    "atomic_write_text": lambda p: atomic_write_text(p, "new\n", "report"),
    "check_writable_file": lambda p: check_writable_file(p, "report"),
    "append_text": lambda p: append_text(p, "new\n", "report"),
    "append_line_durably": lambda p: append_line_durably(p, "new", "report"),
    "cut_torn_tail": lambda p: cut_torn_tail(p, "report"),
}


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
def test_a_link_that_leaves_its_directory_is_never_written_through(
    tmp_path: Path, writer: str, dangling: bool
) -> None:
    """out/report.md -> ../elsewhere/report.md (existing, or not yet): every writer refuses with
    exit 2 naming the link, its target and the directory; the target stays byte-identical (or
    absent) and the link stays a link."""
    elsewhere = tmp_path / "elsewhere" / "report.md"
    elsewhere.parent.mkdir()
    if not dangling:
        elsewhere.write_bytes(b"keep me, no newline")
    link = tmp_path / "out" / "report.md"
    link.parent.mkdir()
    link.symlink_to(elsewhere)
    with pytest.raises(InputError) as e:
        WRITERS[writer](link)
    said = str(e.value)
    assert e.value.exit_code == ExitCode.INVALID_INPUT
    assert str(link) in said and str(elsewhere) in said and f"outside {link.parent}" in said
    assert link.is_symlink()
    if dangling:
        assert not elsewhere.exists()
    else:
        assert elsewhere.read_bytes() == b"keep me, no newline"


def test_a_folder_link_that_leaves_the_directory_named_is_refused(tmp_path: Path) -> None:
    """``within``: a file under ROOT reached through a folder link that leaves ROOT (init's
    .github -> elsewhere) is refused; one whose link stays inside ROOT is written through."""
    root = tmp_path / "repo"
    (tmp_path / "elsewhere").mkdir()
    root.mkdir()
    (root / ".github").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(InputError, match="outside"):
        atomic_write_text(root / ".github" / "w.yml", "x", "starter file", within=root)
    assert list((tmp_path / "elsewhere").iterdir()) == []
    (root / "data").mkdir()
    (root / "q.jsonl").symlink_to(root / "data" / "q.jsonl")
    atomic_write_text(root / "q.jsonl", "x", "starter file", within=root)
    assert (root / "data" / "q.jsonl").read_text() == "x" and (root / "q.jsonl").is_symlink()


def test_a_link_to_a_device_elsewhere_is_written_in_place(tmp_path: Path) -> None:
    """A link to a character device (as /dev/stdout is) replaces no file: written in place."""
    null = private_null(tmp_path)
    (tmp_path / "out").mkdir()
    link = tmp_path / "out" / "report.md"
    link.symlink_to(null)
    atomic_write_text(link, "discarded")
    assert link.is_symlink() and stat.S_ISCHR(null.lstat().st_mode)


def test_character_device_is_written_in_place(tmp_path: Path) -> None:
    """Writing to a /dev/null-like device keeps the device (root would otherwise replace it
    with a regular file)."""
    null = private_null(tmp_path)
    atomic_write_text(null, "discarded")
    assert stat.S_ISCHR(null.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]  # no temporary file either


def _fifo_read_behind(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    """A named pipe at ``fifo``, and a started thread that reads it whole into the list."""
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    return reader, received


def test_fifo_is_written_in_place(tmp_path: Path) -> None:
    """A named pipe gets the text and stays a pipe."""
    fifo = tmp_path / "pipe"
    reader, received = _fifo_read_behind(fifo)
    atomic_write_text(fifo, "through the pipe")
    reader.join(timeout=10)
    assert received == [b"through the pipe"] and stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.parametrize("kind", ["directory", "socket", "link to a directory"])
def test_other_non_regular_targets_are_refused_with_the_path(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "target"
    if kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(target))
    else:
        (tmp_path / "dir").mkdir()
        if kind == "directory":
            target = tmp_path / "dir"
        else:
            target.symlink_to(tmp_path / "dir")
    with pytest.raises(InputError, match=f"cannot write baseline {target}: it exists") as e:
        atomic_write_text(target, "x", "baseline")
    assert e.value.exit_code == ExitCode.INVALID_INPUT
    assert not stat.S_ISREG(target.stat().st_mode)


def test_write_errors_are_input_errors_naming_the_path(tmp_path: Path) -> None:
    """A parent that is a regular file (which root cannot write into either): exit 2."""
    (tmp_path / "file").write_text("I am a file")
    with pytest.raises(InputError, match=f"cannot write pool file {tmp_path / 'file' / 'p'}"):
        atomic_write_text(tmp_path / "file" / "p", "x", "pool file")


def test_immutable_directory_is_an_input_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with immutable(out):
        with pytest.raises(InputError, match=f"cannot write {out / 'report.md'}"):
            atomic_write_text(out / "report.md", "x")
        with pytest.raises(InputError, match=f"cannot write output directory {out}"):
            check_writable_dir(out, "output directory")


def test_stale_temporaries_of_the_target_are_removed(tmp_path: Path) -> None:
    """A killed write's `.NAME.*.tmp` (over an hour old) goes with the next write of NAME; a
    fresh one (a live concurrent writer) and other files' temporaries stay."""
    stale = tmp_path / ".b.json.k1ll3d.tmp"
    fresh = tmp_path / ".b.json.l1ve.tmp"
    other = tmp_path / ".other.json.k1ll3d.tmp"
    for p in (stale, fresh, other):
        p.write_text("partial")
    hours_ago = time.time() - 2 * 3600
    for p in (stale, other):
        os.utime(p, (hours_ago, hours_ago))
    atomic_write_text(tmp_path / "b.json", "whole")
    assert not stale.exists() and fresh.exists() and other.exists()
    assert (tmp_path / "b.json").read_text() == "whole"


def test_check_writable_paths_as_root(tmp_path: Path) -> None:
    """The probes before a run: a missing directory under a writable one is fine; a directory
    path that is a file, or under a file, is refused; so is a file target that is a directory."""
    check_writable_dir(tmp_path / "new" / "deeper", "output directory")
    assert not (tmp_path / "new").exists()  # probing creates nothing
    (tmp_path / "file").write_text("x")
    for bad in (tmp_path / "file", tmp_path / "file" / "out"):
        with pytest.raises(InputError, match=f"output directory {bad}: .* is not a directory"):
            check_writable_dir(bad, "output directory")
    with pytest.raises(InputError, match="it exists and is a directory"):
        check_writable_file(tmp_path, "baseline")
    check_writable_file(private_null(tmp_path), "baseline")


def test_append_errors_name_the_path(tmp_path: Path) -> None:
    """$GITHUB_STEP_SUMMARY pointing at a directory: exit 2 naming it, not an internal error."""
    with pytest.raises(InputError, match=f"cannot write step summary {tmp_path}"):
        append_text(tmp_path, "x", "step summary")
    append_text(tmp_path / "summary.md", "a")
    append_text(tmp_path / "summary.md", "b")
    assert (tmp_path / "summary.md").read_text() == "ab"


def test_atomic_write_keeps_the_old_file_when_the_writer_fails(tmp_path: Path) -> None:
    """A writer that raises leaves the old bytes and no temporary file; one that finishes
    replaces them."""
    path = tmp_path / "vectors.npy"
    path.write_bytes(b"old")

    def broken(f: BinaryIO) -> None:
        f.write(b"half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        atomic_write(path, broken)
    assert path.read_bytes() == b"old" and sorted(tmp_path.iterdir()) == [path]
    atomic_write(path, lambda f: f.write(b"new"))
    assert path.read_bytes() == b"new" and sorted(tmp_path.iterdir()) == [path]
    assert sha256_file(path) == "11507a0e2f5e69d5dfa40a62a1bd7b6ee57e6bcd85c67c9b8431b36fff21c437"


def test_blocks_made_one_by_one_are_written_whole_in_order(tmp_path: Path) -> None:
    """Blocks from an iterator (written by a second thread behind their making) land in order;
    the file appears only when the last one is written."""
    path = tmp_path / "run.x.trec"
    seen: list[bool] = []

    def blocks() -> Iterator[bytes]:
        for i in range(50):
            seen.append(path.exists())
            yield f"line {i}\n".encode() * (i + 1)

    atomic_write_blocks(path, blocks())
    assert path.read_bytes() == b"".join(f"line {i}\n".encode() * (i + 1) for i in range(50))
    assert not any(seen) and sorted(tmp_path.iterdir()) == [path]


def test_blocks_that_fail_leave_the_old_file(tmp_path: Path) -> None:
    """An error while the blocks are made, or while one is written (here: a block that is not
    bytes), is the caller's; the old file stays and no temporary file is left."""
    path = tmp_path / "run.x.trec"
    path.write_bytes(b"old")

    def made_badly() -> Iterator[bytes]:
        yield b"a" * 100_000
        raise RuntimeError("killed")

    def written_badly() -> Iterator[object]:
        yield b"a"
        yield "not bytes"
        yield b"b"

    with pytest.raises(RuntimeError):
        atomic_write_blocks(path, made_badly())
    with pytest.raises(TypeError):
        atomic_write_blocks(path, written_badly())  # type: ignore[arg-type]
    assert path.read_bytes() == b"old" and sorted(tmp_path.iterdir()) == [path]


def test_blocks_made_one_by_one_go_through_a_pipe(tmp_path: Path) -> None:
    """A named pipe gets an iterator's blocks in place (nothing flushed to disk: a pipe cannot
    be)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    atomic_write_blocks(fifo, iter([b"through ", b"the ", b"pipe"]))
    reader.join(timeout=10)
    assert received == [b"through the pipe"] and stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_set_of_files_appears_together_when_committed(tmp_path: Path) -> None:
    """Files of an AtomicFiles set, one made block by block: until the commit only their
    temporary files exist (an old file stays as it was); then every one is whole at once."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "b.md").write_text("old")
    seen: list[list[str]] = []

    def blocks() -> Iterator[bytes]:
        for i in range(30):
            seen.append(sorted(p.name for p in out.iterdir() if not p.name.startswith(".")))
            yield f"line {i}\n".encode() * 1000

    with AtomicFiles() as files:
        a, b, run = files.open(out / "a.json"), files.open(out / "b.md"), files.open(out / "r")
        run.write(blocks())
        b.write([b"new ", b"text\n"])
        a.write([b"{}"])
        assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["b.md"]
        assert (out / "b.md").read_text() == "old"
        files.commit()
    assert all(names == ["b.md"] for names in seen)
    assert sorted(p.name for p in out.iterdir()) == ["a.json", "b.md", "r"]  # no temporary
    assert (out / "a.json").read_bytes() == b"{}" and (out / "b.md").read_text() == "new text\n"
    assert (out / "r").read_bytes() == b"".join(f"line {i}\n".encode() * 1000 for i in range(30))


@pytest.mark.parametrize("failure", [RuntimeError, KeyboardInterrupt, TypeError])
def test_a_set_left_by_an_error_touches_no_file(tmp_path: Path, failure: type) -> None:
    """An error while a file's blocks are made (a bug, Ctrl-C) or written (a block that is not
    bytes), before the commit: every file stays as it was and no temporary file is left."""
    (tmp_path / "b.md").write_text("old")

    def blocks() -> Iterator[object]:
        yield b"a" * 100_000
        if failure is TypeError:
            yield "not bytes"
        else:
            raise failure("stop")
        yield b"b"

    with pytest.raises(failure), AtomicFiles() as files:
        files.open(tmp_path / "a.json").write([b"{}"])
        files.open(tmp_path / "b.md").write([b"new"])
        files.open(tmp_path / "r").write(blocks())  # type: ignore[arg-type]
        files.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.md"]
    assert (tmp_path / "b.md").read_text() == "old"


def test_a_set_whose_flush_fails_is_an_input_error_and_touches_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fails the flush (here: full) is the error of the file it failed (exit 2,
    naming it), raised by the commit before anything is renamed."""

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    error = f"cannot write {tmp_path / 'a.json'}: No space left"
    with pytest.raises(InputError, match=error), AtomicFiles() as files:
        files.open(tmp_path / "a.json").write([b"{}"])
        files.open(tmp_path / "r").write(iter([b"x" * 1000]))
        files.commit()
    assert list(tmp_path.iterdir()) == []


def test_a_bad_path_of_a_set_fails_when_opened_and_leaves_nothing(tmp_path: Path) -> None:
    """The first path that cannot be written is the error (exit 2, naming it), raised as that
    file is opened, before anything is written; the temporaries opened before it go."""
    (tmp_path / "b.md").mkdir()
    error = f"cannot write {tmp_path / 'b.md'}: it exists and is a directory"
    with pytest.raises(InputError, match=error), AtomicFiles() as files:
        files.open(tmp_path / "a.json")
        files.open(tmp_path / "b.md")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.md"]


def test_a_fifo_in_a_set_is_written_in_place(tmp_path: Path) -> None:
    """A named pipe among a set's files gets its text in place, as it is written."""
    fifo = tmp_path / "pipe"
    reader, received = _fifo_read_behind(fifo)
    with AtomicFiles() as files:
        files.open(tmp_path / "a.json").write([b"{}"])
        files.open(fifo).write(iter([b"through ", b"the ", b"pipe"]))
        files.commit()
    reader.join(timeout=10)
    assert received == [b"through the pipe"] and stat.S_ISFIFO(fifo.lstat().st_mode)
    assert (tmp_path / "a.json").read_bytes() == b"{}"


def test_atomic_write_fsyncs_the_handle_that_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The data are flushed through the writer's own handle (writable, so fsync works where a
    read-only handle would be refused), after the writer's last byte and before the rename."""
    path = tmp_path / "shard.json"
    handles: list[int] = []
    synced: list[tuple[int, bytes, bool]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        tmp = next(tmp_path.glob(".shard.json.*.tmp"), None)
        synced.append((fd, tmp.read_bytes() if tmp else b"", path.exists()))
        real_fsync(fd)

    def write(f: BinaryIO) -> None:
        handles.append(f.fileno())
        f.write(b"{}")

    monkeypatch.setattr(os, "fsync", fsync)
    atomic_write(path, write)
    fd, data, renamed = synced[0]
    assert fd == handles[0] and data == b"{}" and not renamed
    assert path.read_bytes() == b"{}"


def test_append_line_durably_fsyncs_each_line_and_never_rewrites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each line is on disk (fsynced, with its newline) when the call returns; earlier lines keep
    their bytes and inode; errors name the path."""
    path = tmp_path / "grades.jsonl"
    seen: list[bytes] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if path.exists():
            seen.append(path.read_bytes())
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    append_line_durably(path, '{"grade": 1}')
    inode = path.stat().st_ino
    append_line_durably(path, '{"grade": 2}')
    assert path.read_bytes() == b'{"grade": 1}\n{"grade": 2}\n'
    assert path.stat().st_ino == inode
    assert seen[0] == b'{"grade": 1}\n' and seen[-1] == path.read_bytes()
    with pytest.raises(InputError, match=f"cannot write annotations {tmp_path}"):
        append_line_durably(tmp_path, "x", "annotations")


def test_cut_torn_tail_keeps_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "grades.jsonl"
    assert cut_torn_tail(path) == 0  # no file
    path.write_bytes(b"one\ntwo\nthr")
    assert cut_torn_tail(path) == 3 and path.read_bytes() == b"one\ntwo\n"
    assert cut_torn_tail(path) == 0 and path.read_bytes() == b"one\ntwo\n"
    path.write_bytes(b"torn")
    assert cut_torn_tail(path) == 4 and path.read_bytes() == b""


def test_publish_dir_never_replaces_an_existing_directory(tmp_path: Path) -> None:
    """The first writer of a directory wins; a later one gets OSError and keeps its temporary."""
    final = tmp_path / "models" / "key"
    first = temp_dir_beside(final)
    (first / "model.onnx").write_bytes(b"one")
    publish_dir(first, final)
    second = temp_dir_beside(final)
    (second / "model.onnx").write_bytes(b"two")
    with pytest.raises(OSError):
        publish_dir(second, final)
    assert (final / "model.onnx").read_bytes() == b"one" and second.is_dir()
    assert second.name.startswith(".key.") and second.name.endswith(".tmp")


@pytest.mark.skipif(os.name == "nt", reason="Windows refuses to rename onto any existing path")
def test_publish_dir_replaces_an_empty_directory_on_posix(tmp_path: Path) -> None:
    """What the docstring says: rename(2) replaces an empty directory at the destination."""
    final = tmp_path / "models" / "key"
    final.mkdir(parents=True)
    tmp = temp_dir_beside(final)
    (tmp / "model.onnx").write_bytes(b"one")
    publish_dir(tmp, final)
    assert (final / "model.onnx").read_bytes() == b"one" and not tmp.exists()
