"""`evalret annotate`: grade a pool's (query, document) pairs one at a time, in a browser.

This module is the part without the web framework: reading the pool (every problem with its
file:line, before any server starts), the scale and its definitions, the seeded order of the
items per annotator, resuming from the annotator's output file, and the session's cursor (next,
grade, skip, back, progress). ``pipeline/annotate_app.py`` serves it over HTTP on 127.0.0.1.

Every grade is one line appended to the output file at once and durably
(``data.atomic.append_line_durably``): the pool line's fields with ``grade`` set, plus
``annotator`` and ``graded_at``. Nothing is rewritten; regrading appends a new line and the last
line of an (annotator, query_id, doc_id) wins. A skipped item writes nothing. Several servers
may append to one file (``--out``): each append takes an exclusive lock on the file and first
repairs a torn last line another one left (``repair_tail``), so a grade never lands glued to it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from evalret.errors import InputError
from evalret.pipeline.annotation import EXTRA, prepare_annotation


def annotate_command(
    pool: Path,
    annotator: str,
    out: Path | None,
    scale_text: str,
    seed: int,
    port: int,
    open_browser: bool,
    say: Callable[[str], None] = print,
) -> None:
    """Check everything, then serve the annotation page on 127.0.0.1 until Ctrl-C."""
    setup = prepare_annotation(pool, annotator, out, scale_text, seed)
    try:
        from evalret.pipeline.annotate_app import serve
    except ImportError as e:
        raise InputError(
            f"evalret annotate needs starlette and uvicorn ({e.name} is missing): "
            f"pip install '{EXTRA}'"
        ) from None
    for note in setup.notes:
        say(note)
    graded, total = setup.session.progress
    say(f"{annotator}: {graded} of {total} items graded; grades go to {setup.out}")
    serve(setup.session, setup.scale, port, open_browser, say)
    sys.stdout.flush()
