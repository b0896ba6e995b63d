"""The faiss index-factory index (``type: faiss``), and what faiss is checked for when the config
is read: its C-int and candidate-list limits, its search parameters, and the hook (``FAISS_CHECKS``)
through which engines.faiss_factory lets faiss itself judge a factory string."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from evalret.data.config.base import AtKey
from evalret.data.config.typed_indexes import TypedIndexBase
from evalret.data.faiss_demand import factory_problem

C_INT_MAX = 2**31 - 1  # faiss takes its graph, search and clustering settings as C ints
MAX_EF = 1 << 24  # efSearch / efConstruction: faiss allocates a candidate list this long
MAX_THREADS = 1024  # faiss's OpenMP starts this many threads (100,000 crash it)
MAX_HNSW_M = 4096  # faiss keeps 2 x m neighbours of every document
MAX_FACTORY = 1000  # characters of a factory string (faiss's std::regex parser crashes on 30,000)


def faiss_error(e: Exception) -> str:
    """The reason in a faiss exception, without its C++ location."""
    text = str(e).strip()
    found = re.search(r"\.(?:cpp|h):\d+: (.*)", text, re.S)
    return " ".join((found.group(1) if found else text).split())


# (factory, params) -> None, or (the key below the index, why faiss refuses it): set by
# engines.faiss_factory, as the data layer does not import faiss. Where the engines are loaded
# (every command that searches) a bad factory string or parameter is refused when the config is
# read; elsewhere when the index is built, naming the same key.
FaissCheck = Callable[[str, dict[str, int | float]], tuple[tuple[str, ...], str] | None]
FAISS_CHECKS: list[FaissCheck] = []

# faiss.ParameterSpace's search parameters (faiss/AutoTune.cpp), each set as a C int: the least
# and the most a search takes ("quantizer_<name>" sets <name> on an IVF's quantizer)
FAISS_PARAM_RANGES: dict[str, tuple[int, int]] = {
    "nprobe": (1, C_INT_MAX),
    "efSearch": (1, MAX_EF),
    "efConstruction": (1, MAX_EF),
    "k_factor_rf": (1, C_INT_MAX),
    "ht": (0, C_INT_MAX),
    "max_codes": (0, C_INT_MAX),
}


def faiss_param_problem(name: str, value: float) -> str | None:
    """Why faiss cannot search with ``name: value``, None when it can (or when faiss alone knows
    the name: check_factory asks it)."""
    base = name
    while base.startswith("quantizer_"):
        base = base.removeprefix("quantizer_")
    if base == "verbose":
        return "verbose is not a search parameter: faiss would print its progress on stdout"
    if base == "k_factor":  # IndexIVFPQR's, a float
        return None if value > 0 else f"k_factor must be greater than 0, not {value!r}"
    if base not in FAISS_PARAM_RANGES:
        return None
    least, most = FAISS_PARAM_RANGES[base]
    if value != int(value) or not least <= value <= most:
        why = "a candidate list this long" if most == MAX_EF else "a C int"
        return (
            f"{name} must be a whole number from {least} to {most:,} (faiss takes {why}), "
            f"not {value!r}"
        )
    return None


class FaissIndexConfig(TypedIndexBase):
    """Any faiss index-factory string over the document vectors (inner product), trained on a
    seeded sample of them and searched with ``params`` (engines/faiss_factory.py)."""

    type: Literal["faiss"] = Field(description="faiss: any faiss index-factory string")
    approximate: ClassVar[bool] = True
    factory: str = Field(
        min_length=1,
        max_length=MAX_FACTORY,
        description='a faiss index_factory string: "IVF256,PQ32"',
    )
    params: dict[str, int | float] = Field(
        default_factory=dict,
        description="search parameters set with faiss.ParameterSpace: {nprobe: 16, efSearch: 64}",
    )
    train_size: int | None = Field(
        None, ge=1, description="documents sampled to train the index (null: all)"
    )
    seed: int = Field(
        0, ge=0, le=C_INT_MAX, description="seed of the training sample and faiss's clustering"
    )
    threads: int | None = Field(
        1,
        ge=1,
        le=MAX_THREADS,
        description="threads building it: 1 = the same index every build; null = all",
    )

    @model_validator(mode="after")
    def _faiss_builds_it(self) -> FaissIndexConfig:
        too_big = factory_problem(self.factory)  # before faiss allocates anything
        if too_big is not None:
            raise AtKey(too_big, ("factory",))
        for name, value in self.params.items():
            if (why := faiss_param_problem(name, value)) is not None:
                raise AtKey(why, ("params", name))
        for check in FAISS_CHECKS:
            problem = check(self.factory, self.params)
            if problem is not None:
                raise AtKey(problem[1], problem[0])
        return self
