"""`evalret annotate`: grade a pool's (query, document) pairs one at a time, in a browser.

The session (the pool, the scale, each annotator's seeded order, resuming, the durable appends)
is ``pipeline/annotation.py``; ``pipeline/annotate_app.py`` serves it over HTTP on 127.0.0.1,
imported here only, so that starlette and uvicorn (``evalret[annotate]``) load only for this
command. What the command says goes through ``say``, which the CLI passes.
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
    say: Callable[[str], None],
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
