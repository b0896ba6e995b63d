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
wrote by name. The cache writes with these directly: its paths are its own, never links or
devices.
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
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
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
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path.parent, f".{glob.escape(path.name)}.*.tmp")
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            os.chmod(tmp, _default_mode())
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


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
    made one by one (an iterator, not a sequence) are written behind their making (see
    _write_behind)."""
    target, in_place = write_target(path, what, within)
    newline = os.linesep.encode("ascii")
    native = (b if newline == b"\n" else b.replace(b"\n", newline) for b in blocks)

    def write(f: BinaryIO) -> None:
        if isinstance(blocks, Sequence):  # made already: nothing to write beside
            for block in native:
                f.write(block)
        else:
            _write_behind(f, native, sync=not in_place)

    try:
        if in_place:
            with open(target, "wb") as f:
                write(f)
        else:
            atomic_write(target, write)
    except OSError as e:
        raise InputError(f"cannot write {_label(path, what)}: {e.strerror or e}") from None


_datasync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync


def _write_behind(f: BinaryIO, blocks: Iterable[bytes | bytearray], sync: bool) -> None:
    """Write ``blocks`` to ``f`` in order, each by a second thread while the next one is made,
    and with ``sync`` flushed to disk there too (so the caller's final fsync waits for little):
    a write and a flush run without the GIL, beside the making. At most one block is written
    at a time and one more held. An error of the writing is raised here once that thread has
    ended; an error of the making, once the block being written is."""
    failed: list[BaseException] = []
    writer: threading.Thread | None = None

    def write(block: bytes | bytearray) -> None:
        try:
            f.write(block)
            if sync:
                f.flush()
                _datasync(f.fileno())
        except BaseException as e:  # raised in the caller's thread
            failed.append(e)

    try:
        for block in blocks:
            if writer is not None:
                writer.join()
            if failed:
                break
            writer = threading.Thread(target=write, args=(block,), daemon=True)
            writer.start()
    finally:
        if writer is not None:
            writer.join()
    if failed:
        raise failed[0]


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
