"""The run's smaller sections: the golden set, bootstrap, health, cache, embedding engine,
output, history, leakage, beyond-accuracy and sample settings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from evalret.choices import GOLDEN_FORMATS as GOLDEN_FORMATS
from evalret.choices import GoldenFormatName as GoldenFormatName
from evalret.data.config.base import StrictModel, UsablePath
from evalret.data.config.dsn import url_port_problem

# the demo golden set, shipped in the package (package data, pyproject.toml; golden_sets/demo of
# the repository links to it): the golden set of the built-in defaults, wherever evalret runs
DEMO_GOLDEN_SET = Path(__file__).resolve().parents[2] / "demo"
DEMO_SHOWN = "the packaged demo"  # the default as the reference and messages name it


def demo_golden_set() -> Path:
    """The default ``golden_set.path``: the packaged demo (a factory, so that the JSON Schema and
    the reference carry no path of this machine)."""
    return DEMO_GOLDEN_SET


class GoldenSetConfig(StrictModel):
    """Where the golden set is and how to read it."""

    path: UsablePath = Field(
        default_factory=demo_golden_set,
        description="directory (or TREC qrels file); default: the demo golden set packaged "
        "with evalret",
    )
    format: GoldenFormatName = Field(
        "auto", description="auto (told from the files), native, beir or trec"
    )
    split: str = Field("test", description="BEIR qrels split: qrels/<split>.tsv")
    queries: UsablePath | None = Field(None, description="TREC format: the queries file")
    corpus: UsablePath | None = Field(None, description="TREC format: the corpus file")
    qrels: UsablePath | None = Field(None, description="TREC format: the qrels file")
    # evalret score: a TREC qrels file alone (no queries or corpus beside it) is a golden set of
    # its judged documents and queries without text; left out of the dump (reports unchanged)
    qrels_only: bool = Field(False, exclude=True, description="TREC: the qrels file alone")


class BootstrapConfig(StrictModel):
    """The bootstrap confidence intervals of every metric."""

    samples: int = Field(1000, ge=100, description="bootstrap resamples")
    seed: int = Field(0, ge=0, description="seed of the resampling")
    confidence: float = Field(0.95, gt=0, lt=1, description="the intervals' confidence level")


class HealthConfig(StrictModel):
    """Intrinsic embedding health of the corpus and query vectors (no labels needed)."""

    enabled: bool = Field(True, description="compute the health figures")
    sample: int = Field(20_000, ge=1, description="seeded pairs for avg_cosine and uniformity")
    max_rows: int = Field(50_000, ge=2, description="seeded rows for the spectral figures")


class CacheConfig(StrictModel):
    """The embedding cache: vectors kept on disk, keyed by model, settings and text."""

    enabled: bool = Field(True, description="read and write the cache")
    dir: UsablePath | None = Field(
        None, description="default: $EVALRET_CACHE_DIR or the user cache dir"
    )


RAY_ADDRESS = re.compile(r"^ray://[^\s/:@]+(:\d{1,5})?$")


class EmbeddingConfig(StrictModel):
    """Where the texts the cache misses are embedded: in this process (local), or on a Ray
    cluster through Ray Data (engines/ray_engine.py). Never part of the vectors' identity: both
    engines load the same model from the same ``model`` settings."""

    engine: Literal["local", "ray"] = Field(
        "local",
        description="local: this process; ray: Ray Data actors (pip install 'evalret[ray]')",
    )
    address: str | None = Field(
        None,
        description="engine ray: null starts a local Ray runtime (shut down after embedding); "
        '"auto" or "ray://host:port" uses an existing cluster',
    )
    workers: int = Field(2, ge=1, le=4096, description="engine ray: actors, one model each")
    batch_size: int = Field(256, ge=1, description="engine ray: texts per batch sent to an actor")
    gpus_per_worker: float = Field(0, ge=0, le=64, description="engine ray: GPUs per actor")

    @field_validator("address")
    @classmethod
    def _known_address(cls, v: str | None) -> str | None:
        if v is not None and RAY_ADDRESS.match(v) and (problem := url_port_problem(v)):
            raise ValueError(f"{v!r}: {problem}")
        if v is None or v == "auto" or RAY_ADDRESS.match(v):
            return v
        raise ValueError(
            f'{v!r} is no Ray address: null (a local runtime), "auto" or "ray://host:port"'
        )

    @model_validator(mode="after")
    def _ray_settings_need_ray(self) -> EmbeddingConfig:
        if self.engine == "local" and self.address is not None:
            raise ValueError("address is set but engine is local: set engine: ray, or drop it")
        return self


class OutputConfig(StrictModel):
    """Where report files go."""

    dir: UsablePath = Field(Path("reports"), description="report directory (--out overrides)")


class HistoryConfig(StrictModel):
    """`evalret history`: the SQLite database that keeps a metric's trend across commits."""

    path: UsablePath | None = Field(
        None, description="history database; default: evalret-history.sqlite in the current dir"
    )


class LeakageConfig(StrictModel):
    """`evalret leakage`: when a training query counts as a copy of a golden query, and when the
    check fails."""

    threshold: float = Field(
        0.85, gt=0, le=1, description="embedding cosine at or above which a pair leaks"
    )
    max_fraction: float | None = Field(
        None, ge=0, le=1, description="exit 1 when a larger fraction of golden queries leaks"
    )


class BeyondAccuracyConfig(StrictModel):
    """Corpus coverage and the Gini coefficient of retrieval counts in every index's top k
    (evalret.core.beyond); reported, never gated."""

    k: int = Field(
        10, ge=1, description="the cutoff; lowered to the search depth when rankings are shorter"
    )


class SampleConfig(StrictModel):
    """A seeded, stratified sample of the golden set for a fast gate (evalret.core.sampling
    states the rule): ``queries`` queries, and with ``documents`` a corpus of that many."""

    queries: int = Field(ge=1, description="queries drawn, stratified over the slices")
    documents: int | None = Field(
        None,
        ge=1,
        description="documents kept: the judged ones of the sampled queries, then seeded "
        "distractors up to this many; null: the whole corpus",
    )
    seed: int = Field(0, ge=0, description="seed of the draw")
    min_per_slice: int = Field(
        10, ge=0, description="the floor: queries every slice keeps (all of a smaller slice)"
    )
