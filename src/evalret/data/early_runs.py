"""Run files read while a command's modules import.

`evalret score` and `evalret trec_eval` know their run files from their arguments, long before
the reader is imported. A thread reads each one then (a regular file, up to EARLY_BYTES in all):
its bytes, their sha256 and pyarrow's parse (``data.runcolumns.read_early``; pyarrow parses in
that thread alone), work that leaves the GIL and so runs on another core while the main thread
imports. ``data.runfile.read_run`` takes what was read (``take``) instead of reading the file:
the columnar reader checks those bytes as it checks a file's and takes the parse, and a file it
refuses goes to the line reader, which reads the file itself, as ever. What the thread cannot
read (a file missing, not regular, gzipped, changed while read; any error) it leaves: the file
is read as without it, and any problem is named there.

What is scored is the file as the thread read it, and the run's sha256 is of those bytes.
``take`` waits for the thread, and gives a read only for the same file (device, inode, size
and modification time). This module imports only the standard library.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalret.data.runcolumns import EarlyRun

EARLY_BYTES = 64 << 20  # the most bytes of run files read early, all files together

_Key = tuple[int, int, int, int]  # a file's device, inode, size and modification time (ns)
_read: dict[_Key, EarlyRun] = {}
_threads: list[threading.Thread] = []


def _key(st: os.stat_result) -> _Key:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def start(runs: Iterable[str]) -> None:
    """Read the run files named by ``runs`` (the command line's PATH or NAME=PATH: both a whole
    argument and what follows its first "=" are tried) in a thread: the regular files, up to
    EARLY_BYTES in all. What an earlier call read and no reader took is dropped."""
    forget()
    chosen, total = [], 0
    for path in dict.fromkeys(p for arg in runs for p in (arg, arg.partition("=")[2]) if p):
        try:
            st = os.stat(path)
        except (OSError, ValueError):  # missing, unreadable, or no path: read as without
            continue
        if stat.S_ISREG(st.st_mode) and 0 < st.st_size <= EARLY_BYTES - total:
            chosen.append(path)
            total += st.st_size
    if chosen:
        thread = threading.Thread(target=_read_all, args=(chosen,), daemon=True)
        _threads.append(thread)
        thread.start()


def forget() -> None:
    """Drop what was read early and not taken (once the thread ends)."""
    for thread in _threads:
        thread.join()
    _threads.clear()
    _read.clear()


def take(path: Path) -> EarlyRun | None:
    """The early read of the file at ``path``, once (after the thread ends); None when there is
    none, or the file is no longer the one read."""
    for thread in _threads:
        thread.join()
    if not _read:
        return None
    try:
        key = _key(os.stat(path))
    except (OSError, ValueError):
        return None
    return _read.pop(key, None)


def _read_all(paths: list[str]) -> None:
    """The thread: each file read by ``read_early``; any error leaves that file unread here."""
    try:
        from evalret.data.runcolumns import read_early
    except Exception:  # (pyarrow missing, say: the reader names it)
        return
    for path in paths:
        try:  # a FIFO is opened without waiting for a writer, and not read
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            with open(fd, "rb", buffering=0) as f:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or st.st_size > EARLY_BYTES:
                    continue
                early = read_early(f, st.st_size)
            if early is not None:
                _read[_key(st)] = early
        except Exception:
            continue
