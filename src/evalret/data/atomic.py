"""Every file evalret writes goes through here: the user's files and the cache's alike.

A regular file (or a new one) is written to a temporary file beside it, then renamed over it, so
readers see the old file or the new one, never a part. A symbolic link is followed: its final
target is replaced and the link stays a link, but only while that target lies inside the
directory the write is meant for (``within``: the directory the user named, whose fixed names a
command writes, e.g. `init`'s ROOT; by default the directory of the path itself): a link, in the
path or in one of its folders, that leads a file out of it is refused, so a link planted in a
checkout (``evalret.schema.json -> ~/.bashrc``) never turns a write into one elsewhere. A
character device (``/dev/null``) or a named pipe is written in place, since it cannot be
replaced by renaming (and must not be: replacing /dev/null as root breaks the system). Any other
existing non-regular target (a directory, a socket, a block device) is refused. Errors are
InputError naming the path: exit 2, no traceback.

A write killed between creating its temporary file and the rename leaves ``.NAME.<random>.tmp``
behind; the next write of NAME removes those older than STALE_TEMP_S (an hour: far longer than
any write takes, so a temporary file of a live concurrent writer is never removed).

Underneath, ``atomic_write`` creates or replaces one regular file from any writer (text, numpy
arrays, faiss graphs) that writes to the open binary handle it is given; that same handle is
flushed to disk (fsync) before the rename, and the directory after it. ``temp_dir_beside`` and
``publish_dir`` do the same for a whole directory (an exported model) whose files another library
wrote by name; ``AtomicFiles`` for a set of files renamed together (a run's report files). The
cache writes with these directly: its paths are its own, never links or devices.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from evalret.errors import InputError

STALE_TEMP_S = 3600


def _default_mode() -> int:
    """rw for everyone the umask allows (what a plain open() would create)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _label(path: Path, what: str) -> str:
    return f"{what} {path}" if what else str(path)


def _is_under(real: str, base: str) -> bool:
    """Whether the real path ``real`` is the real directory ``base`` or lies below it."""
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def contained_target(path: Path, what: str = "", within: Path | None = None) -> Path:
    """The real path of ``path`` (every symbolic link followed, in the path or its folders),
    which must lie inside the real directory ``within`` (default: the directory of ``path``);
    InputError (exit 2) naming the link's target and the directory when a link leads out."""
    target = os.path.realpath(path)
    base = within if within is not None else path.parent
    if _is_under(target, os.path.realpath(base)):
        return Path(target)
    raise InputError(
        f"cannot write {_label(path, what)}: a symbolic link leads it to {target}, outside "
        f"{base}; evalret never writes through a link that leaves the directory it writes in: "
        f"remove the link, or point it inside {base}"
    )


def write_target(path: Path, what: str = "", within: Path | None = None) -> tuple[Path, bool]:
    """(the file to write, whether to write it in place) for ``path``: the final target of a
    symbolic link, which must lie inside ``within`` (default: the directory of ``path``; see
    contained_target), or ``path`` itself in place when it is a character device or a FIFO.
    Raises InputError for any other existing target that is not a regular file."""
    try:
        mode = path.stat().st_mode  # follows symbolic links
    except FileNotFoundError:  # new file, or a dangling link: created where the link points
        return contained_target(path, what, within), False
    except OSError as e:
        raise InputError(f"cannot write {_label(path, what)}: {e.strerror or e}") from None
    if stat.S_ISREG(mode):
        return contained_target(path, what, within), False
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return path, True
    kind = "a directory" if stat.S_ISDIR(mode) else "neither a regular file nor a device"
    raise InputError(f"cannot write {_label(path, what)}: it exists and is {kind}")


def is_stale(path: Path, older_than_s: float = STALE_TEMP_S) -> bool:
    """Whether ``path`` was last modified over ``older_than_s`` ago (False when it is gone)."""
    try:
        return path.lstat().st_mtime < time.time() - older_than_s
    except OSError:
        return False


def remove_stale_temps(directory: Path, pattern: str = ".*.tmp") -> int:
    """Remove the temporary files (or directories) matching ``pattern`` in ``directory`` that
    killed writes left (older than STALE_TEMP_S); returns how many."""
    removed = 0
    for tmp in directory.glob(pattern):
        if not is_stale(tmp):
            continue
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            with suppress(OSError):
                tmp.unlink()
        removed += 1
    return removed


def _fsync_dir(directory: Path) -> None:
    """Flush ``directory``'s entries (a rename in it) to disk, where the platform allows."""
    with suppress(OSError):  # not every platform or file system can open a directory
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fsync_written_file(path: Path) -> None:
    """Flush a file that another library wrote by name (an exported model) to disk. Opened for
    writing, as fsync needs on some platforms (Windows refuses it on a read-only handle); a file
    that cannot be opened for writing is flushed through a read-only handle, which POSIX allows."""
    try:
        fd = os.open(path, os.O_RDWR)
    except PermissionError:
        fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Create or replace the regular file ``path`` whole: ``write(f)`` writes to ``f``, an open
    binary handle on a temporary file beside it (``.NAME.<random>.tmp``, the mode a plain open()
    would give); that handle is flushed and fsynced, closed, and the file renamed over ``path``;
    the directory is flushed too. On any failure the temporary file is removed and the old file,
    if any, stays. OSError is left to the caller. Stale temporaries of ``path`` (see
    remove_stale_temps) are removed first."""
    fd, tmp = _temp_file_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _temp_file_beside(path: Path) -> tuple[int, Path]:
    """A new temporary file ``.NAME.<random>.tmp`` beside ``path``, with the mode a plain open()
    would give: its descriptor and path (the parent made, stale temporaries of ``path`` removed
    first). OSError as the filesystem gives it, nothing left behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path.parent, f".{glob.escape(path.name)}.*.tmp")
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(name, _default_mode())
    except BaseException:
        os.close(fd)
        Path(name).unlink(missing_ok=True)
        raise
    return fd, Path(name)


def temp_dir_beside(path: Path) -> Path:
    """A new empty directory ``.NAME.<random>.tmp`` beside ``path``, to fill and then hand to
    publish_dir (stale temporaries of ``path`` are removed first). OSError when the parent
    cannot be created or written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path.parent, f".{glob.escape(path.name)}.*.tmp")
    return Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))


def publish_dir(tmp: Path, path: Path) -> None:
    """Flush every file of the filled directory ``tmp`` and ``tmp`` itself to disk, then rename
    it to ``path`` (os.rename), so readers see the whole directory or none. When ``path`` exists
    already, what happens is the platform's: a non-empty directory (another writer got there
    first) or a file makes the rename fail with OSError, and ``tmp`` is then left to the caller;
    an empty directory is silently replaced on POSIX (Linux, macOS) and refused on Windows."""
    for p in sorted(tmp.rglob("*")):
        if p.is_file() and not p.is_symlink():
            _fsync_written_file(p)
    _fsync_dir(tmp)
    os.rename(tmp, path)
    _fsync_dir(path.parent)


def sha256_file(path: Path, chunk: int = 1 << 24) -> str:
    """Hex sha256 of the bytes of ``path``, read in chunks (the checksum stored beside cached
    files and checked before they are trusted)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def _encoded(text: str) -> bytes:
    """``text`` as open(path, "w", encoding="utf-8") writes it: UTF-8, each newline as the
    platform's line separator."""
    return (text if os.linesep == "\n" else text.replace("\n", os.linesep)).encode("utf-8")


def atomic_write_text(path: Path, text: str, what: str = "", within: Path | None = None) -> None:
    """Write ``text`` to ``path`` as the module docstring says; ``what`` names the file in
    errors ("baseline", "pool file"); ``within``: the directory a link may not lead out of."""
    atomic_write_blocks(path, [text.encode("utf-8")], what, within)


def atomic_write_blocks(
    path: Path, blocks: Iterable[bytes | bytearray], what: str = "", within: Path | None = None
) -> None:
    """``atomic_write_text`` for a text given as UTF-8 blocks (a run file of millions of lines
    is never held whole); each newline is written as the platform's line separator. Blocks
    made one by one (an iterator, not a sequence) are written behind their making: a set of
    one file (see AtomicFiles)."""
    with AtomicFiles() as files:
        files.open(path, what, within).write(blocks)
        files.commit()


_datasync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync


class _Behind:
    """The writing of one file's blocks to ``f`` in order, each by a second thread while the
    caller makes the next, and with ``sync`` flushed to disk there too (so the final fsync
    waits for little): a write and a flush run without the GIL, beside the making. At most one
    block is written at a time and one more held. An error of the writing is kept until
    ``raise_failed``, the thread ended."""

    def __init__(self, f: BinaryIO, sync: bool) -> None:
        self.f, self.sync = f, sync
        self.failed: list[BaseException] = []
        self._writer: threading.Thread | None = None

    def put(self, block: bytes | bytearray | None) -> bool:
        """Start writing ``block`` (None: flush the file to disk with fsync, its last step) once
        the one before is written; False, and nothing started, when a write failed."""
        self.join()
        if self.failed:
            return False
        self._writer = threading.Thread(target=self._write, args=(block,), daemon=True)
        self._writer.start()
        return True

    def join(self) -> None:
        """Wait for the block being written."""
        if self._writer is not None:
            self._writer.join()
            self._writer = None

    def raise_failed(self) -> None:
        if self.failed:
            raise self.failed[0]

    def _write(self, block: bytes | bytearray | None) -> None:
        try:
            if block is None:
                self.f.flush()
                os.fsync(self.f.fileno())
            else:
                self.f.write(block)
                if self.sync:
                    self.f.flush()
                    _datasync(self.f.fileno())
        except BaseException as e:  # raised in the caller's thread
            self.failed.append(e)


class AtomicFiles:
    """Files written as one set (a run's report files), committed together: ``open`` makes each
    file's temporary beside it as atomic_write does (after write_target's checks, so a bad path
    fails as it would alone, in the order opened); ``PendingFile.write`` fills it from blocks
    the caller makes, written and flushed to disk behind their making and not waited for, so
    that the caller goes on to the next file; ``commit`` waits for every file's writing, then
    renames each over its path and flushes each directory once. So the files appear together,
    each whole, and none is touched before. Used as a context manager: leaving it by an
    exception before the commit (an error anywhere, Ctrl-C) waits for the writing, then removes
    every temporary file. A character device or a FIFO is written in place by ``write``. Errors
    are InputError naming the path."""

    def __init__(self) -> None:
        self._files: list[PendingFile] = []

    def __enter__(self) -> AtomicFiles:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        if kind is not None:
            for file in self._files:
                file.discard()

    def open(self, path: Path, what: str = "", within: Path | None = None) -> PendingFile:
        """A new file of the set at ``path`` (``what``, ``within``: see atomic_write_text)."""
        target, in_place = write_target(path, what, within)
        file = PendingFile(path, what, target)
        self._files.append(file)  # from here on discarded on an error
        if not in_place:
            with _naming(path, what):
                fd, file.tmp = _temp_file_beside(target)
                file.handle = os.fdopen(fd, "wb")
        return file

    def commit(self) -> None:
        """Wait for every file's writing, then rename each over its path (in the order opened)
        and flush their directories to disk."""
        for file in self._files:
            file.finish()
        for file in self._files:
            file.publish()
        for directory in dict.fromkeys(f.target.parent for f in self._files if f.renamed):
            _fsync_dir(directory)


class PendingFile:
    """One file of an AtomicFiles set: its temporary file (None: written in place) and its
    writing."""

    def __init__(self, path: Path, what: str, target: Path) -> None:
        self.path, self.what, self.target = path, what, target
        self.tmp: Path | None = None
        self.handle: BinaryIO | None = None
        self.renamed = False
        self._behind: _Behind | None = None

    def write(self, blocks: Iterable[bytes | bytearray]) -> None:
        """Write ``blocks`` (UTF-8 text; each newline as the platform's line separator) behind
        their making (each flushed to disk when they are made one by one, an iterator), then
        flush the file to disk, not waited for: an error of a write already ended is raised
        here, the others by the set's commit."""
        newline = os.linesep.encode("ascii")
        native = (b if newline == b"\n" else b.replace(b"\n", newline) for b in blocks)
        with _naming(self.path, self.what):
            if self.handle is None:  # a device or a FIFO
                with open(self.target, "wb") as f:
                    for block in native:
                        f.write(block)
                return
            sync = not isinstance(blocks, Sequence)
            self._behind = behind = _Behind(self.handle, sync)
            for block in native:
                if not behind.put(block):
                    break
            if not behind.put(None):
                behind.raise_failed()

    def finish(self) -> None:
        """Wait for the writing; its error, if any, raised."""
        with _naming(self.path, self.what):
            if self._behind is not None:
                self._behind.join()
                self._behind.raise_failed()
            if self.handle is not None:
                self.handle.close()

    def publish(self) -> None:
        """Rename the written temporary file over the path."""
        if self.tmp is not None:
            with _naming(self.path, self.what):
                os.replace(self.tmp, self.target)
            self.tmp, self.renamed = None, True

    def discard(self) -> None:
        """Wait for the writing, close the file and remove the temporary file, errors aside."""
        with suppress(BaseException):
            if self._behind is not None:
                self._behind.join()
            if self.handle is not None:
                self.handle.close()
        if self.tmp is not None:
            with suppress(OSError):
                self.tmp.unlink(missing_ok=True)
            self.tmp = None


@contextmanager
def _naming(path: Path, what: str) -> Iterator[None]:
    """OSError as the InputError (exit 2) that names ``path``."""
    try:
        yield
    except OSError as e:
        raise InputError(f"cannot write {_label(path, what)}: {e.strerror or e}") from None


def append_text(path: Path, text: str, what: str = "") -> None:
    """Append ``text`` to ``path`` (GitHub's step summary: appended to, never replaced); errors
    are InputError naming the path."""
    write_target(path, what)  # a link that leaves its directory, a directory: refused
    try:
        with path.open("a", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise InputError(f"cannot write {_label(path, what)}: {e.strerror or e}") from None


def append_line_durably(path: Path, line: str, what: str = "") -> None:
    """Append one line (``line`` plus a newline) to ``path`` and flush it to disk before
    returning: one write, flush, fsync, and the directory fsynced when the file was created. A
    killed writer loses at most this line (a torn last line); lines already written are never
    touched (an annotator's grades). Errors are InputError naming the path."""
    write_target(path, what)  # a link that leaves its directory, a directory: refused
    created = not os.path.lexists(path)
    try:
        with path.open("ab") as f:
            f.write(_encoded(line + "\n"))
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise InputError(f"cannot write {_label(path, what)}: {e.strerror or e}") from None
    if created:
        _fsync_dir(path.parent)


def cut_torn_tail(path: Path, what: str = "") -> int:
    """Cut a last line that has no newline (a writer killed mid-line) off ``path`` so that the
    next appended line starts on a line of its own; the complete lines before it stay as they
    are. Returns how many bytes were cut (0: none, or no such file)."""
    write_target(path, what)  # a link that leaves its directory, a directory: refused
    try:
        with path.open("r+b") as f:
            data = f.read()
            if not data or data.endswith(b"\n"):
                return 0
            keep = data.rfind(b"\n") + 1
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
            return len(data) - keep
    except FileNotFoundError:
        return 0
    except OSError as e:
        raise InputError(f"cannot write {_label(path, what)}: {e.strerror or e}") from None


def _nearest_existing(path: Path) -> Path:
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def check_writable_dir(directory: Path, what: str = "") -> None:
    """Raise InputError unless files can be created in ``directory`` (or, when it does not exist
    yet, in its nearest existing parent). Probes by creating and removing a file: a permission
    check alone would pass as root on a directory root cannot write (an immutable directory, a
    read-only file system)."""
    existing = _nearest_existing(directory)
    if not existing.is_dir():
        raise InputError(f"cannot write {_label(directory, what)}: {existing} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".evalret-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise InputError(f"cannot write {_label(directory, what)}: {e.strerror or e}") from None


def check_writable_file(path: Path, what: str = "", within: Path | None = None) -> None:
    """Raise InputError unless ``path`` can be written by atomic_write_text (checked before long
    work, so that a bad output path fails in a second, not after the evaluation)."""
    target, in_place = write_target(path, what, within)
    if not in_place:
        check_writable_dir(target.parent, what)
