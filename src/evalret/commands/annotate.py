"""`evalret annotate`: grade a pool's (query, document) pairs one at a time, in a browser.

The session (the pool, the scale, each annotator's seeded order, resuming, the durable appends)
is ``pipeline/annotation.py``; ``pipeline/annotate_app.py`` serves it over HTTP on 127.0.0.1,
imported here only, so that starlette and uvicorn (``evalret[annotate]``) load only for this
command. What the command says goes through ``say``, which the CLI passes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalret.errors import InputError
from evalret.pipeline.annotation import EXTRA, prepare_annotation


@dataclass(frozen=True, kw_only=True)
class AnnotateRequest:
    """What `evalret annotate` is asked for (``annotate_command``'s argument, every field named)."""

    pool: Path
    annotator: str
    out: Path | None = None  # None: POOL.ANNOTATOR.jsonl
    scale: str = "0-3"
    seed: int = 0
    port: int = 8765
    open_browser: bool = True


def annotate_command(request: AnnotateRequest, *, say: Callable[[str], None]) -> None:
    """Check everything, then serve the annotation page on 127.0.0.1 until Ctrl-C; what the
    command says goes to ``say``."""
    r = request
    setup = prepare_annotation(r.pool, r.annotator, r.out, r.scale, r.seed)
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
    say(f"{r.annotator}: {graded} of {total} items graded; grades go to {setup.out}")
    serve(setup.session, setup.scale, r.port, r.open_browser, say)
    sys.stdout.flush()
