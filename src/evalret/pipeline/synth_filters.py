"""`evalret golden synth`: which documents queries are written from, the few-shot examples, and
the filters a written query passes (pipeline/synth.py writes them).

- **documents** cover the corpus: every document embedded with the config's model (through the
  embedding cache), k-means (engines/kmeans.py, seeded) into ``synth.clusters`` clusters (default
  the square root of ``n``, rounded up), and ``n`` documents drawn: every cluster gets one while
  ``n`` allows, the rest go ``proportional`` to the clusters' sizes (largest remainder, ties to the
  earlier cluster) or ``equal``, never more than a cluster holds; inside a cluster documents are
  taken in the seeded order of core/sampling.seeded_keys. One query per drawn document. With
  ``synth.multi_document``, that many of the drawn documents (the first in the seeded order) are
  each joined with their nearest neighbour by cosine (another document, not the same text) for a
  two-document question. Each item's style is drawn seeded with the weights of ``synth.styles``.
- **examples**: ``synth.examples`` queries of the log (or of the draft's ``origin: log``
  queries), taken in the seeded order, one handful for every prompt; a query in which
  core.pii.find_pii finds anything is never one (nothing personal goes into a prompt).
- **filters**, in this order, each counted: *duplicates*, a query near-identical (validate's
  near-duplicate rule, core/duplicates.similar_pairs) to an earlier synthetic query or to a query
  of the draft or the log, is dropped; *too easy*, a query whose share of words (core/query_shapes
  words) found in its source document(s) is above ``synth.max_overlap`` AND whose source
  document BM25 (the config's ``indexes.bm25`` settings) ranks first with a relative margin
  (s1 - s2) / s1 above ``synth.bm25_margin`` over the second, is tagged ``too-easy`` or dropped
  (``synth.too_easy``); *unanswerable*, a query whose source document(s) the judge (``judge:``,
  pipeline/judge.py: its prompt, cache and votes) does not grade relevant (core/relevance) is
  dropped. The judge's answers land in its own answer cache: `evalret golden judge` grading the
  same (query, document) later pays nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from evalret.core.duplicates import NEAR_DUPLICATE_JACCARD, similar_pairs
from evalret.core.query_shapes import words
from evalret.core.ranking import id_rank
from evalret.core.sampling import seeded_keys
from evalret.data.config import STYLES, Config, SynthConfig
from evalret.data.goldenset.draft import CorpusDoc
from evalret.pipeline.synth import Item

ProgressFactory = Callable[[str, int], Callable[[int], None]]


# --- documents ---------------------------------------------------------------------------------


def default_clusters(n: int) -> int:
    return max(1, math.ceil(math.sqrt(n)))


def allocate(sizes: Sequence[int], n: int, allocation: str) -> list[int]:
    """Documents drawn from each cluster of ``sizes`` (the module docstring): one each while
    ``n`` allows (the largest clusters first), the rest by the rule, capped by each size."""
    k = len(sizes)
    take = [0] * k
    n = min(n, sum(sizes))
    order = sorted(range(k), key=lambda c: (-sizes[c], c))
    for c in order[: min(n, k)]:
        if sizes[c]:
            take[c] = 1
    left = n - sum(take)
    while left > 0:
        room = [c for c in range(k) if take[c] < sizes[c]]
        weights = np.array([sizes[c] if allocation == "proportional" else 1 for c in room], float)
        quota = weights / weights.sum() * left
        whole = np.floor(quota).astype(int)
        rest = left - int(whole.sum())
        by_remainder = sorted(range(len(room)), key=lambda j: (-(quota[j] - whole[j]), room[j]))
        for j in by_remainder[:rest]:
            whole[j] += 1
        for j, c in enumerate(room):
            add = min(int(whole[j]), sizes[c] - take[c])
            take[c] += add
            left -= add
    return take


def draw_documents(
    doc_ids: Sequence[str], assignment: np.ndarray, k: int, n: int, seed: int, allocation: str
) -> list[int]:
    """Positions of the drawn documents, in the seeded order (the module docstring)."""
    keys = seeded_keys(doc_ids, seed, "synth")
    members = [np.flatnonzero(assignment == c) for c in range(k)]
    take = allocate([len(m) for m in members], n, allocation)
    drawn: list[int] = []
    for c, m in enumerate(members):
        ordered = m[np.lexsort((m, keys[m]))]
        drawn += [int(i) for i in ordered[: take[c]]]
    return sorted(drawn, key=lambda i: (int(keys[i]), i))


def nearest_other(vectors: np.ndarray, i: int, texts: Sequence[str]) -> int | None:
    """The document nearest ``i`` by cosine, another one and not of the same text (ties to the
    earlier position); None when there is none."""
    v = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    sims = v @ v[i]
    order = np.lexsort((np.arange(len(sims)), -sims))
    return next((int(j) for j in order if j != i and texts[j] != texts[i]), None)


def multi_count(synth: SynthConfig, n: int) -> int:
    m = synth.multi_document
    return min(n, round(m * n) if m < 1 else int(m))


def draw_styles(synth: SynthConfig, count: int, seed: int) -> list[str]:
    """Each item's style, drawn with ``synth.styles``'s weights (seeded)."""
    given = {str(k): float(v) for k, v in synth.styles.items()}
    names = [s for s in STYLES if given.get(s, 0.0) > 0]
    weights = np.array([given[s] for s in names], dtype=np.float64)
    rng = np.random.default_rng([seed, 1])
    picks = rng.choice(len(names), size=count, p=weights / weights.sum())
    return [names[int(p)] for p in picks]


@dataclass(frozen=True)
class Choice:
    """The items to write, the number of clusters, and how many are two-document questions;
    ``estimated``: a dry run's stand-in draw (``choose``), not the run's."""

    items: list[Item]
    clusters: int
    multi: int
    estimated: bool = False


def choose(
    cfg: Config,
    docs: Sequence[CorpusDoc],
    n: int,
    seed: int,
    progress: ProgressFactory | None = None,
    dry_run: bool = False,
) -> Choice:
    """Embed the corpus, cluster it, draw the documents and styles (the module docstring). A
    dry run whose model is an API (engines/embedders.Capabilities.api) sends nothing to embed
    what its cache lacks: it stands in ``n`` documents in the seeded order, without clusters
    or pairs, for its counts (``estimated``)."""
    from evalret.engines.embedders import capabilities, open_embedder
    from evalret.engines.kmeans import kmeans

    synth = cfg.synth or SynthConfig()
    texts = [d.embedded for d in docs]
    opened = open_embedder(cfg.model, cfg.cache)
    if dry_run and capabilities(cfg.model).api:
        held = opened.cached.cached(texts, "document") if opened.cached is not None else None
        if held is None or not held.all():
            return _stand_in(synth, docs, n, seed)
    tick = progress("embedding the corpus", len(texts)) if progress is not None else None
    vectors = np.asarray(opened.embedder.embed(texts, "document", tick), dtype=np.float32)
    k = min(synth.clusters or default_clusters(n), len(docs))
    clusters = kmeans(vectors, k, seed)
    drawn = draw_documents(
        [d.id for d in docs], clusters.assignment, clusters.k, n, seed, synth.allocation
    )
    multi = multi_count(synth, len(drawn))
    styles = draw_styles(synth, len(drawn), seed)
    items = []
    for pos, (i, style) in enumerate(zip(drawn, styles, strict=True)):
        j = nearest_other(vectors, i, texts) if pos < multi else None
        chosen = [i] if j is None else [i, j]
        items.append(
            Item(tuple(docs[c].id for c in chosen), tuple(texts[c] for c in chosen), style)
        )
    return Choice(items, clusters.k, sum(len(it.doc_ids) == 2 for it in items))


def _stand_in(synth: SynthConfig, docs: Sequence[CorpusDoc], n: int, seed: int) -> Choice:
    """``n`` documents in the seeded order, one query each (a dry run's estimate)."""
    keys = seeded_keys([d.id for d in docs], seed, "synth")
    order = sorted(range(len(docs)), key=lambda i: (int(keys[i]), i))[:n]
    styles = draw_styles(synth, len(order), seed)
    items = [
        Item((docs[i].id,), (docs[i].embedded,), s) for i, s in zip(order, styles, strict=True)
    ]
    return Choice(items, 0, 0, estimated=True)


# --- examples ----------------------------------------------------------------------------------


def few_shot(texts: Sequence[str], count: int, seed: int) -> tuple[list[str], int]:
    """``count`` example queries in the seeded order, none holding personal data; and how many
    were left out for it."""
    unique = list(dict.fromkeys(t.strip() for t in texts if t.strip()))
    if not unique or count == 0:
        return [], 0
    from evalret.core.pii import find_pii

    clean = [t for t in unique if not find_pii(t)]
    keys = seeded_keys(clean, seed, "synth-examples")
    order = sorted(range(len(clean)), key=lambda i: (int(keys[i]), i))
    return [clean[i] for i in order[:count]], len(unique) - len(clean)


# --- filters -----------------------------------------------------------------------------------


def duplicates(queries: Sequence[str], existing: Sequence[str]) -> set[int]:
    """Positions of ``queries`` near-identical to an earlier one or to one of ``existing``."""
    out = {j for _, j, _ in similar_pairs(queries)}
    if existing:
        out |= {i for i, _, _ in similar_pairs(queries, existing, NEAR_DUPLICATE_JACCARD)}
    return out


def overlap(query: str, documents: Sequence[str]) -> float:
    """The share of the query's words found among the words of ``documents``."""
    q = words(query)
    if not q:
        return 0.0
    found = {w for d in documents for w in words(d)}
    return sum(w in found for w in q) / len(q)


def too_easy(
    cfg: Config,
    queries: Sequence[str],
    sources: Sequence[Sequence[int]],
    docs: Sequence[CorpusDoc],
) -> list[bool]:
    """Whether each query is too easy (the module docstring)."""
    from evalret.engines.lexical import bm25_search

    synth = cfg.synth or SynthConfig()
    texts = [d.embedded for d in docs]
    easy = [
        overlap(q, [texts[i] for i in src]) > synth.max_overlap
        for q, src in zip(queries, sources, strict=True)
    ]
    asked = [i for i, e in enumerate(easy) if e]
    if not asked:
        return easy
    found = bm25_search(
        texts, [queries[i] for i in asked], cfg.indexes.bm25, 2, id_rank([d.id for d in docs])
    )
    for row, i in enumerate(asked):
        ids, scores = found.ids[row], found.scores[row]
        top, s1 = int(ids[0]), float(scores[0])
        s2 = float(scores[1]) if ids[1] >= 0 and np.isfinite(scores[1]) else 0.0
        easy[i] = top >= 0 and top in sources[i] and s1 > 0 and (s1 - s2) / s1 > synth.bm25_margin
    return easy
