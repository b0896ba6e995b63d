"""The sample stage of a run (config ``sample``, `evalret run --sample N`): draw the queries and
documents to evaluate (core.sampling states the rule), restrict the golden set and its slices to
them, describe the sample for the report and the fingerprint, and refuse a baseline that cannot
be gated against on these terms.

Slices are computed on the whole scored set, then restricted to the drawn queries: a query keeps
the slices it has in a full run (the frequency quantiles do not move), and a custom slice listing
query ids does not lose them.

Gating a sample: a queries-only sample is gated against the same queries of a baseline (a full
one, or one made with a sample holding them); a documents sample changes every score (fewer
distractors), so it is gated only against a baseline made with the same sample, and any other is
refused (exit 2). A baseline made on a sampled corpus is refused by any run but one on the same
sample.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from evalret.core.digest import json_digest
from evalret.core.sampling import (
    SAMPLING_METHOD,
    QuerySample,
    sample_documents,
    sample_queries,
)
from evalret.core.slices import Slice
from evalret.data.config import Config, SampleConfig
from evalret.data.goldenset import GoldenSet
from evalret.data.schema import RunReport, SampleSection, SampleSlice
from evalret.errors import IncomparableError, Problem

OPTIMISTIC = (
    "absolute figures on a sampled corpus are optimistic (fewer distractors than the whole "
    "corpus): compare them only with a baseline made with the same sample (the sample is part "
    "of the fingerprint)"
)


@dataclass(frozen=True)
class Sampled:
    """The golden set and slices a sampled run evaluates, and how they were drawn."""

    golden: GoldenSet
    slices: list[Slice]
    section: SampleSection
    fingerprint: dict[str, Any]  # the fingerprint's ``sample`` part

    @property
    def samples_documents(self) -> bool:
        """Whether the corpus was cut (``documents`` below the corpus size)."""
        return self.section.document_digest is not None


def with_sample(cfg: Config, queries: int | None) -> Config:
    """``cfg`` sampling ``queries`` queries (`--sample N`): the config's other sample settings
    (documents, seed, floor) are kept; None leaves the config as it is."""
    if queries is None:
        return cfg
    sample = (
        cfg.sample.model_copy(update={"queries": queries})
        if cfg.sample is not None
        else SampleConfig(queries=queries)
    )
    return cfg.model_copy(update={"sample": sample})


def _kept_documents(golden: GoldenSet, query_ids: list[str]) -> np.ndarray:
    """Boolean mask over the corpus: the documents judged (any grade) for ``query_ids``."""
    keep = np.zeros(len(golden.doc_ids), dtype=bool)
    index = golden.doc_index
    for q in query_ids:
        for d in golden.qrels.get(q, {}):
            keep[index[d]] = True
    return keep


def _notes(cfg: SampleConfig, drawn: QuerySample, total: int, section: dict[str, Any]) -> list[str]:
    """What a reader of the sampled figures must know."""
    notes = [
        f"a sample of {drawn.size} of {total} queries (seed {cfg.seed}): confidence intervals "
        "and reliability labels are those of the sampled queries"
    ]
    if drawn.size >= total:
        notes[0] = f"the sample size {cfg.queries} is not below the set's {total} queries: all "
        notes[0] += "are evaluated"
    elif drawn.size > cfg.queries:
        notes.append(
            f"the floor of {cfg.min_per_slice} queries per slice needed {drawn.size} queries, "
            f"more than the {cfg.queries} asked"
        )
    if drawn.floor_raised:
        notes.append(
            f"the floor of {cfg.min_per_slice} queries per slice puts "
            f"{', '.join(drawn.floor_raised)} above their share of the set (oversampled)"
        )
    n_docs, n_total, judged = (
        section[k] for k in ("n_documents", "n_documents_total", "n_documents_judged")
    )
    if n_docs == n_total:
        notes.append(
            "the whole corpus is searched: a baseline of the whole set is gated on the same queries"
        )
    elif judged >= n_docs:
        notes.append(
            f"{n_docs} of {n_total} documents: the sampled queries judge {judged}, not fewer "
            f"than documents: {cfg.documents}, so no distractor was added; " + OPTIMISTIC
        )
    else:
        notes.append(
            f"{n_docs} of {n_total} documents: the {judged} judged for the sampled queries, "
            "then seeded distractors; " + OPTIMISTIC
        )
    return notes


def draw_sample(cfg: SampleConfig, golden: GoldenSet, slices: list[Slice]) -> Sampled:
    """Draw the sample of ``golden`` (the scored queries) stratified over ``slices``."""
    masks = [(s.name, s.mask) for s in slices]
    drawn = sample_queries(golden.query_ids, masks, cfg.queries, cfg.seed, cfg.min_per_slice)
    ids = [golden.query_ids[i] for i in drawn.positions]
    sub, total = golden.subset(ids), len(golden.query_ids)
    judged = None
    if cfg.documents is not None:
        keep = _kept_documents(golden, ids)
        judged = int(keep.sum())
        docs = sample_documents(golden.doc_ids, keep, cfg.documents, cfg.seed)
        if len(docs) < len(golden.doc_ids):  # else: the whole corpus
            sub = replace(
                sub,
                doc_ids=[golden.doc_ids[i] for i in docs],
                doc_texts=[golden.doc_texts[i] for i in docs],
            )
    sampled_slices = [replace(s, mask=s.mask[drawn.positions]) for s in slices]
    fingerprint = {
        "method": SAMPLING_METHOD,
        **cfg.model_dump(),
        "query_digest": json_digest(ids),
        # only for a corpus that shrank: a sample of documents not below the corpus is none
        "document_digest": (
            json_digest(sub.doc_ids) if len(sub.doc_ids) < len(golden.doc_ids) else None
        ),
    }
    sizes: dict[str, Any] = {
        "n_documents": len(sub.doc_ids),
        "n_documents_total": len(golden.doc_ids),
        "n_documents_judged": judged,
    }
    section = SampleSection(
        **cfg.model_dump(),
        method=SAMPLING_METHOD,
        n_queries=drawn.size,
        n_queries_total=total,
        **sizes,
        n_strata=drawn.n_strata,
        floor_raised=list(drawn.floor_raised),
        slices={
            s.name: SampleSlice(
                total=s.n_queries,
                sampled=t.n_queries,
                share=round(min(cfg.queries, total) * s.n_queries / max(total, 1), 2),
            )
            for s, t in zip(slices, sampled_slices, strict=True)
        },
        query_digest=fingerprint["query_digest"],
        document_digest=fingerprint["document_digest"],
        notes=_notes(cfg, drawn, total, sizes),
    )
    return Sampled(golden=sub, slices=sampled_slices, section=section, fingerprint=fingerprint)


def _made_on(sample: dict[str, Any] | None) -> str:
    if sample is None:
        return "the whole golden set"
    documents = sample.get("documents")
    corpus = f", documents {documents}" if documents is not None else ""
    return f"another sample (queries {sample.get('queries')}{corpus}, seed {sample.get('seed')})"


def check_sample_baseline(
    baseline: RunReport, sampled: Sampled | None, query_ids: list[str], source: str
) -> None:
    """Refuse (exit 2) a baseline this run cannot be gated against because of sampling: a
    documents sample against any baseline but one made with the same sample, a baseline made on
    a sampled corpus against any other run, and a baseline lacking queries this run evaluates."""
    base = baseline.fingerprint.sample
    current = sampled.fingerprint if sampled is not None else None
    same = base is not None and current is not None and base == current
    if sampled is not None and sampled.samples_documents and not same:
        raise IncomparableError(
            f"cannot gate against baseline {source}: this run samples the corpus (documents: "
            f"{sampled.section.documents}) and the baseline was made on {_made_on(base)}",
            [
                Problem(OPTIMISTIC),
                Problem(
                    "save a baseline with this very sample (--save-baseline), or sample the "
                    "queries only (sample.documents: null) to gate against a full baseline"
                ),
            ],
        )
    if base is not None and base.get("document_digest") is not None and not same:
        raise IncomparableError(
            f"cannot gate against baseline {source}: it was made on a sampled corpus "
            f"(documents: {base.get('documents')}), and this run is not on the same sample",
            [Problem("run with the baseline's sample settings, or gate against a full baseline")],
        )
    known = set(baseline.query_ids)
    missing = [q for q in query_ids if q not in known]
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if missing[10:] else "")
        raise IncomparableError(
            f"cannot gate against baseline {source}: it lacks {len(missing)} of the "
            f"{len(query_ids)} queries this run evaluates (it was made on {_made_on(base)})",
            [Problem(f"queries not in the baseline: {shown}")],
        )
