"""Where a judgment came from, and the views of a golden set's labels that follow from it.

A judgment's source is a string: ``human:<annotator>`` (graded by a person in ``evalret annotate``
or a merged annotation file), ``llm:<model>@<prompt hash>`` (graded by ``evalret judge``) or
``import`` (read from a golden set that records no source). Only ``llm:`` sources are model labels:
every other source, and a judgment without one, counts as a human label.

A golden set carries three mappings (``data.goldenset.GoldenSet``):

- ``qrels``: the labels the gate uses by default, one grade per pair. Where a person and the judge
  both graded a pair, the person's grade is kept.
- ``sources``: the source of each grade in ``qrels`` (a pair without an entry: ``import``).
- ``llm_qrels``: every grade the judge gave, also where a person graded the same pair (that
  overlap is what calibration and prediction-powered intervals need).

The views below are plain dictionary work: the core imports nothing else here.
"""

from __future__ import annotations

from collections.abc import Mapping

HUMAN = "human"  # every label that is not a model's, as a run's label sources count it
HUMAN_PREFIX = "human:"
LLM_PREFIX = "llm:"
IMPORT = "import"

Qrels = Mapping[str, Mapping[str, int]]
Sources = Mapping[str, Mapping[str, str]]


def is_llm(source: str | None) -> bool:
    """Whether a judgment's source is a model (``llm:...``); None (no record) is not."""
    return source is not None and source.startswith(LLM_PREFIX)


def human_source(annotator: str) -> str:
    return f"{HUMAN_PREFIX}{annotator}"


def llm_source(model: str, prompt_hash: str) -> str:
    return f"{LLM_PREFIX}{model}@{prompt_hash}"


def human_view(qrels: Qrels, sources: Sources) -> dict[str, dict[str, int]]:
    """``qrels`` without the grades whose source is a model: what ``gate.labels: human`` scores."""
    out: dict[str, dict[str, int]] = {}
    for qid, grades in qrels.items():
        src = sources.get(qid, {})
        kept = {d: g for d, g in grades.items() if not is_llm(src.get(d))}
        if kept:
            out[qid] = kept
    return out


def prediction_view(qrels: Qrels, llm_qrels: Qrels) -> dict[str, dict[str, int]]:
    """``qrels`` with the judge's grade wherever the judge graded the pair: the model's view of
    every query, the prediction that prediction-powered inference corrects."""
    out = {qid: dict(grades) for qid, grades in qrels.items()}
    for qid, grades in llm_qrels.items():
        out.setdefault(qid, {}).update(grades)
    return out


def has_llm_labels(sources: Sources, llm_qrels: Qrels) -> bool:
    return any(llm_qrels.values()) or any(is_llm(s) for m in sources.values() for s in m.values())


def label_class(source: str | None) -> str:
    """How a run's label sources name a judgment's source: the model's ``llm:<model>@<hash>``
    as it is, every other source (and none) ``human``."""
    return source if source is not None and is_llm(source) else HUMAN


def label_sources(qrels: Qrels, sources: Sources) -> dict[str, int]:
    """How many of ``qrels``' grades each label source gave (``label_class``), ``human`` first,
    then the models by name."""
    counts: dict[str, int] = {}
    for qid, grades in qrels.items():
        src = sources.get(qid, {})
        for doc in grades:
            name = label_class(src.get(doc))
            counts[name] = counts.get(name, 0) + 1
    return {name: counts[name] for name in sorted(counts, key=lambda n: (n != HUMAN, n))}
