"""What a faiss index-factory string asks of memory and of training data, read from the string
alone (no faiss): the codebooks it trains (IVF's coarse centroids, PQ's sub-quantizers, RQ's and
LSQ's stages, OPQ's rotation PQ), the inverted lists it allocates, the transforms that change the
dimension. faiss allocates a PQ's codebooks (``d * 2**nbits`` floats) and an IVF's lists as soon
as ``index_factory`` builds the index, before training checks anything, so these figures are
checked before faiss is called (data/config/faiss_settings.py when the config is read,
engines/faiss_factory.py before the index is built).

The words are faiss's own (faiss/index_factory.cpp): ``IVF<n>[k|M]``, ``PQ<M>[x<nbits>]``,
``RQ``/``LSQ``/``RCQ``/``LSCQ<M>x<nbits>[_<M>x<nbits>...]``, ``PRQ``/``PLSQ<splits>x<M>x<nbits>``,
``OPQ<M>[_<d>]``, ``PCA[W][R]<d>``, ``RR[<d>]``, ``ITQ[<d>]``, ``Pad<d>``. Words faiss refuses for
inner product before allocating (``IMI``, ``Residual``, ``LSH``) and words without codebooks
(``Flat``, ``SQ8``, ``HNSW32``, ``RaBitQ``...) are left to faiss.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# faiss refuses a PQ of more than 2**24 centroids per codebook ("nbits larger than 24 is not
# practical"); evalret holds every codebook to it: IVF's coarse centroids, RQ's and LSQ's stages
MAX_CENTROIDS = 1 << 24
# what the config check may allocate: faiss builds the index at a small dimension to see that it
# parses; a factory string whose codebooks take more even there is refused unbuilt
CHECK_BYTES = 256 << 20
LIST_BYTES = 160  # an empty inverted list, as faiss 1.15 allocates it (IVF1M,Flat: 160 MiB)
FLOAT = 4
_BIG = 10**18  # a number of more digits is read as this (and refused: nothing is that large)
MAX_LCM = 1 << 20  # the smallest dimension searched for no further

_WORD = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"(?P<pca>PCAW?R?)(?P<pca_d>\d+)"
    r"|(?P<rr>RR|ITQ)(?P<rr_d>\d+)?"
    r"|OPQ(?P<opq_m>\d+)(?:_(?P<opq_d>\d+))?"
    r"|Pad(?P<pad_d>\d+)"
    r"|IVF(?P<ivf>\d+)(?P<ivf_unit>[kM]?)"
    r"|PQ(?P<pq_m>\d+)(?:x(?P<pq_b>\d+))?"
    r"|(?P<aq>RQ|RCQ|LSQ|LSCQ)(?P<aq_def>\d+x\d+(?:_\d+x\d+)*)"
    r"|(?P<paq>PRQ|PLSQ)(?P<paq_s>\d+)x(?P<paq_m>\d+)x(?P<paq_b>\d+)"
    r")"
)


def _int(text: str) -> int:
    """A number of the string; one too long to be anything real reads as 10**18."""
    return int(text) if len(text) <= 18 else _BIG


def _centroids(nbits: int) -> int:
    return 1 << min(nbits, 62)


@dataclass(frozen=True)
class Codebook:
    """Codebooks one word of the string trains: ``count`` of ``centroids`` each, every one over
    1/``parts`` of the dimension (a PQ's sub-vectors), the dimension ``dim`` a transform before it
    fixed (None: the vectors' own)."""

    word: str
    centroids: int
    count: int
    parts: int
    dim: int | None
    nbits: int | None = None  # when the centroids are 2**nbits

    def what(self) -> str:
        if self.nbits is not None and self.nbits > 62:
            each = f"2**{self.nbits}"
        elif self.nbits is not None:
            each = f"2**{self.nbits} = {self.centroids:,}"
        else:
            each = f"{self.centroids:,}" if self.centroids < _BIG else "over 10**18"
        many = "a codebook" if self.count == 1 else f"{self.count:,} codebooks"
        return f"{self.word} trains {many} of {each} centroids"


@dataclass(frozen=True)
class Transform:
    """A transform to ``d_out`` dimensions (None: the vectors' own; ``pad``: at least them)."""

    word: str
    d_out: int | None
    pad: bool = False


@dataclass(frozen=True)
class Lists:
    word: str
    n: int


Part = Codebook | Transform | Lists


def parse(factory: str) -> list[Part]:
    """The parts of ``factory`` that take memory or training data, in order."""
    parts: list[Part] = []
    dim: int | None = None  # fixed by the last transform (None: the input's)
    for m in _WORD.finditer(factory):
        word = m.group(0)
        if m["pca"]:
            dim = _int(m["pca_d"])
            parts.append(Transform(word, dim))
        elif m["rr"]:
            dim = _int(m["rr_d"]) if m["rr_d"] else dim
            parts.append(Transform(word, dim))
        elif m["opq_m"]:
            if m["opq_d"]:
                parts.append(Transform(word, _int(m["opq_d"])))
                dim = _int(m["opq_d"])
            else:
                parts.append(Transform(word, dim))
            parts.append(Codebook(word, 256, _int(m["opq_m"]), _int(m["opq_m"]), dim, 8))
        elif m["pad_d"]:
            dim = _int(m["pad_d"])
            parts.append(Transform(word, dim, pad=True))
        elif m["ivf"]:
            n = _int(m["ivf"]) * {"": 1, "k": 1024, "M": 1024 * 1024}[m["ivf_unit"]]
            parts += [Codebook(word, n, 1, 1, dim), Lists(word, n)]
        elif m["pq_m"]:
            nbits = _int(m["pq_b"]) if m["pq_b"] else 8
            count = _int(m["pq_m"])
            parts.append(Codebook(word, _centroids(nbits), count, count, dim, nbits))
        elif m["aq"]:
            for stage in m["aq_def"].split("_"):
                count, nbits = (_int(v) for v in stage.split("x"))
                parts.append(Codebook(word, _centroids(nbits), count, 1, dim, nbits))
        elif m["paq"]:
            splits, count, nbits = _int(m["paq_s"]), _int(m["paq_m"]), _int(m["paq_b"])
            parts.append(Codebook(word, _centroids(nbits), splits * count, splits, dim, nbits))
    return parts


def codebooks(parts: list[Part]) -> list[Codebook]:
    return [p for p in parts if isinstance(p, Codebook)]


def largest(parts: list[Part]) -> Codebook | None:
    """The codebook of the most centroids (the one that needs the most training vectors)."""
    found = codebooks(parts)
    return max(found, key=lambda c: c.centroids) if found else None


def smallest_dim(parts: list[Part]) -> int:
    """The smallest input dimension every split of the vectors' own dimension divides."""
    lcm = 1
    for c in codebooks(parts):
        if c.dim is None and c.parts > 0:
            lcm = math.lcm(lcm, min(c.parts, MAX_LCM))
            if lcm > MAX_LCM:
                return MAX_LCM
    return lcm


def bytes_at(parts: list[Part], d: int, n_train: int = 0) -> int:
    """Bytes the parts take over ``d``-dimensional vectors, ``n_train`` of them trained on:
    codebooks (``centroids x dimension`` floats), transform matrices and the training vectors they
    output, empty inverted lists. An estimate from below: faiss's own working memory is left out."""
    total = 0
    for p in parts:
        if isinstance(p, Codebook):
            dim = p.dim if p.dim is not None else d
            total += p.count * p.centroids * max(1, math.ceil(dim / max(p.parts, 1))) * FLOAT
        elif isinstance(p, Transform) and p.d_out is not None:
            d_out = max(p.d_out, d) if p.pad else p.d_out
            total += (d * d_out + n_train * d_out) * FLOAT
        elif isinstance(p, Lists):
            total += p.n * LIST_BYTES
    return total


def size_text(n_bytes: int) -> str:
    """``n_bytes`` as ``1.5 GiB``."""
    value = float(n_bytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            text = f"{value:,.0f}" if unit == "bytes" else f"{value:,.1f}".removesuffix(".0")
            return f"{text} {unit}"
        value /= 1024
    raise AssertionError  # pragma: no cover


def describe(parts: list[Part]) -> str:
    """What takes the memory: each codebook, transform and set of inverted lists."""
    said = []
    for p in parts:
        if isinstance(p, Codebook):
            said.append(p.what())
        elif isinstance(p, Transform) and p.d_out is not None:
            said.append(f"{p.word} outputs {p.d_out:,} dimensions")
        elif isinstance(p, Lists):
            said.append(f"{p.word} allocates {p.n:,} inverted lists")
    return "; ".join(said)


# the fewest neighbours per node faiss's graph builds take: HNSW1 and HNSW0 crash it, an NSG
# of R under 7 never finished building (faiss 1.15)
_GRAPH = re.compile(r"(?<![A-Za-z0-9])(HNSW|NSG)(\d+)")
GRAPH_LEAST = {"HNSW": 2, "NSG": 8}
_NUMBER = re.compile(r"\d+")
_TOKEN = re.compile(r"[^,()]+")


def _numbers_problem(factory: str) -> str | None:
    """Why a number of ``factory`` is none faiss can build with: a 0 (``PQ4x0``, ``RQ0x8``,
    ``PQ4x4fs_0`` crash faiss; ``IVF0`` fails its search), or a graph with too few neighbours."""
    for m in _NUMBER.finditer(factory):
        if m.group().strip("0") == "":
            word = next(t.group() for t in _TOKEN.finditer(factory) if t.end() >= m.end())
            return (
                f"{word!r} asks for 0 of something (a list, a codebook, a bit, a dimension, a "
                "block): faiss crashes or fails on it; every number is 1 or more"
            )
    for m in _GRAPH.finditer(factory):
        least = GRAPH_LEAST[m[1]]
        if _int(m[2]) < least:
            return (
                f"{m.group()!r}: a {m[1]} graph needs at least {least} neighbours per node "
                "(faiss crashes or never finishes building below)"
            )
    return None


def factory_problem(factory: str) -> str | None:
    """Why ``factory`` is refused whatever the vectors, None when it may be built: a number faiss
    cannot take (a 0, a graph of too few neighbours), a codebook of more than 2**24 centroids, or
    codebooks that take more than 256 MiB even over vectors of the smallest dimension the string
    allows."""
    numbers = _numbers_problem(factory)
    if numbers is not None:
        return numbers
    parts = parse(factory)
    top = largest(parts)
    if top is not None and top.centroids > MAX_CENTROIDS:
        return (
            f"{top.what()}: faiss refuses more than 2**24 = {MAX_CENTROIDS:,} centroids per "
            "codebook as not practical (and training one needs at least as many vectors)"
        )
    d = smallest_dim(parts)
    need = bytes_at(parts, d)
    if need > CHECK_BYTES:
        return (
            f"{factory!r} takes {size_text(need)} even over {d}-dimensional vectors, before any "
            f"is added ({describe(parts)}): evalret refuses a factory string over "
            f"{size_text(CHECK_BYTES)} at its smallest dimension"
        )
    return None
