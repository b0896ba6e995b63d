"""A run file as an index (``indexes.<name>: {type: run, path: FILE, format: trec | jsonl}``):
the rankings another system wrote, read by ``data.runfile`` (streaming, the best ``depth`` kept per
query), scored like evalret's own."""

from __future__ import annotations

from typing import Any

from evalret.core.ranking import SearchResult
from evalret.data.config import Config, RunIndexConfig
from evalret.data.runfile import read_run
from evalret.engines.retrievers.base import BaseRetriever, SearchJob
from evalret.engines.retrievers.external import Alignment, columns_search_result


class RunRetriever(BaseRetriever):
    """Reads its run file when the run searches; its params carry the file's SHA-256 (so a
    changed file changes the fingerprint) and what did not line up with the golden set."""

    corpus_bound = False  # its documents may be unknown to the corpus: rankings go past it
    needs_vectors = False

    def __init__(self, name: str, settings: RunIndexConfig, config: Config) -> None:
        self.name = name
        self.settings = settings
        self.enabled = settings.enabled
        self.sha256: str | None = None
        self.alignment: Alignment | None = None
        self.scores_partial = 0

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "run",
            "file": self.settings.path.name,
            "format": self.settings.file_format,
        }
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        if self.alignment is not None:
            out.update(self.alignment.params())
        if self.scores_partial:  # only when some: a clean run's fingerprint is unchanged
            out["scores_partial"] = self.scores_partial
        return out

    def retrieve(self, job: SearchJob) -> SearchResult:
        with job.timed(f"read_{self.name}"):
            run = read_run(self.settings.path, self.settings.file_format, job.depth)
            result, self.alignment = columns_search_result(
                run, job.query_ids, job.doc_ids, job.depth
            )
        self.sha256, self.scores_partial = run.sha256, run.scores_partial
        return result
