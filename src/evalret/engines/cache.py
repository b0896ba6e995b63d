"""Content-addressed embedding cache.

Vectors are keyed by (embedding identity, text): the identity is everything that changes a vector
(model, weights hash, prefixes, max length, normalization, truncation, device, library versions)
and selects a namespace directory; inside it, each text is keyed by the first 16 bytes of the
sha256 of the text as fed to the model (of kind and text when the kind may move the vector:
engines/protocols.key_texts).

A namespace holds shards. A shard is written once and never modified: ``<id>.vecs.npy`` (float32
[n, dim]), ``<id>.keys.npy`` (uint8 [n, 16]) and, last, ``<id>.json`` with the counts and the sha256
of both arrays. Every file is written to a temporary name and renamed, so a reader sees a whole
shard or none; two runs sharing a cache write separate shards, so neither tears the other's reads
nor loses entries. A shard whose files are missing, truncated or fail their checksums, or whose
vectors are not all finite (checked as a model's fresh vectors are), is never trusted: it is
moved aside as ``*.corrupt`` and its texts are embedded again. Vectors are read through memory
maps; their dimension is checked against the model's and ``truncate_dim`` as they are read.

``model.truncate_dim`` is cut on read (``Cut``): with the cache on, the run's embedder is the
model at its full dimension (engines/embedders.open_embedder), so the cache keeps the full vectors
under the namespace a run without ``truncate_dim`` uses, and a truncated run reads their first
``truncate_dim`` columns and normalizes them again, the order of a truncated encode
(st_embedder.finish_vectors). What the cache lacks is embedded in full, stored in full, then cut:
a change of ``truncate_dim`` never embeds (or pays an API for) a text twice.

The cache never fails a run: a cache that cannot be read or written (a read-only directory, a
path that is a file, junk inside it) is skipped for what it cannot do, with one warning in the
report per failure, and the run goes on embedding what it could not read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import mmap
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.digest import json_digest
from evalret.data.atomic import (
    atomic_write,
    check_writable_dir,
    is_stale,
    remove_stale_temps,
    sha256_file,
)
from evalret.data.stores import default_cache_dir as default_cache_dir  # where it was before
from evalret.engines.protocols import (
    Embedder,
    Kind,
    Progress,
    StreamingEmbedder,
    cache_identity,
    key_texts,
    model_warnings,
)
from evalret.engines.st_embedder import finish_vectors, vector_matrix
from evalret.errors import ConfigError, InputError

KEY_BYTES = 16
COPY_ROWS = 16_384  # rows copied out of a shard at a time
MAX_PRUNE_DAYS = 36500
SHARD_SUFFIXES = (".json", ".keys.npy", ".vecs.npy")


def text_keys(texts: Sequence[str]) -> np.ndarray:
    """uint8 [n, 16]: the first 16 bytes of sha256 of each text."""
    out = np.empty((len(texts), KEY_BYTES), dtype=np.uint8)
    for i, t in enumerate(texts):
        out[i] = np.frombuffer(hashlib.sha256(t.encode("utf-8")).digest()[:KEY_BYTES], np.uint8)
    return out


def _save_array(path: Path, array: np.ndarray) -> None:
    """Write ``array`` as a .npy file at ``path``, atomically."""
    atomic_write(path, lambda f: np.save(f, array))


def _release(array: np.ndarray, start_row: int, stop_row: int) -> None:
    """Drop this process's mapping of rows [start_row, stop_row) of a memory-mapped ``array``
    (madvise DONTNEED, where the platform has it): the pages stay in the page cache but leave
    the process's resident memory. Nothing happens for an array in memory."""
    mapped = getattr(array, "_mmap", None)
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if mapped is None or advice is None or not isinstance(array, np.memmap):
        return
    # np.memmap maps the file from its offset rounded down to the allocation granularity
    head = int(array.offset) % mmap.ALLOCATIONGRANULARITY
    begin = head + start_row * array.strides[0]
    end = head + stop_row * array.strides[0]
    begin -= begin % mmap.PAGESIZE
    with contextlib.suppress(OSError, ValueError):
        mapped.madvise(advice, begin, end - begin)


def copy_rows(out: np.ndarray, dst: np.ndarray, source: np.ndarray, src: np.ndarray) -> None:
    """``out[dst] = source[src, :width]`` (``width``: the columns of ``out``, the first ones of a
    truncated run) without a whole-size temporary: source rows are copied in ascending order,
    ``COPY_ROWS`` at a time, and a memory-mapped source's pages are released behind the copy, so
    the copy in ``out`` is the only one that stays resident."""
    order = np.argsort(src, kind="stable")
    dst, src = dst[order], src[order]
    width = out.shape[1]
    for lo in range(0, len(src), COPY_ROWS):
        rows = src[lo : lo + COPY_ROWS]
        first, stop = int(rows[0]), int(rows[-1]) + 1
        if stop - first == len(rows):  # consecutive rows: a slice, no gather
            out[dst[lo : lo + COPY_ROWS]] = source[first:stop, :width]
        else:
            out[dst[lo : lo + COPY_ROWS]] = source[rows, :width]
        _release(source, first, stop)


def _all_finite(vectors: np.ndarray) -> bool:
    """Whether every value of the memory-mapped ``vectors`` is finite, read ``COPY_ROWS`` rows
    at a time (each block's pages released behind the check, as copy_rows does)."""
    for lo in range(0, len(vectors), COPY_ROWS):
        hi = min(lo + COPY_ROWS, len(vectors))
        finite = bool(np.isfinite(vectors[lo:hi]).all())
        _release(vectors, lo, hi)
        if not finite:
            return False
    return True


class CacheDimensionError(InputError):
    """Vectors of one embedding identity with two dimensions: the identity leaves out something
    that changes the vectors (exit 2, naming the cache and how to get out)."""

    def __init__(self, namespace: Namespace, cached: int, other: int, source: str) -> None:
        root = namespace.path.parent.parent
        super().__init__(
            f"the embedding cache {root} holds {cached}-dimensional vectors for this model "
            f"(namespace {namespace.path.name}) where {source} {other}-dimensional ones: "
            "the model's identity leaves out something that changes its vectors (a custom "
            "encoder's identity() must name its dimension and settings). Clear the cache "
            f"(evalret cache clear --dir {root}) or run with --no-cache"
        )


@dataclass(frozen=True)
class Cut:
    """``model.truncate_dim`` applied on read (the module docstring): the first ``dim`` columns
    of the model's full vectors, normalized again when ``normalize``."""

    dim: int
    normalize: bool

    def width(self, full: int) -> int:
        """The columns kept of ``full``-dimensional vectors; ConfigError (exit 2) when
        ``truncate_dim`` exceeds them, as a truncated encode says (st_embedder.finish_vectors)."""
        if self.dim > full:
            raise ConfigError(f"model.truncate_dim {self.dim} exceeds the model's dimension {full}")
        return self.dim

    def finish(self, vectors: np.ndarray) -> np.ndarray:
        """The cut vectors normalized (or checked comparable) as a truncated encode's are."""
        return finish_vectors(vectors, None, self.normalize)


@dataclass
class _Shard:
    keys: np.ndarray  # uint8 [n, 16]
    vectors: np.ndarray  # float32 [n, dim], memory-mapped


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    corrupt_shards: list[str] = field(default_factory=list)


class Namespace:
    """The shards of one embedding identity."""

    def __init__(self, root: Path, identity: dict[str, Any]) -> None:
        self.digest = json_digest(identity)
        self.path = root / "embeddings" / self.digest[:32]
        self.identity = identity
        self._opened: dict[str, _Shard | None] = {}  # each shard is verified once per run

    def _shard_ids(self) -> list[str]:
        if not self.path.is_dir():
            return []
        return sorted(
            p.name[: -len(".json")] for p in self.path.glob("*.json") if p.name != "identity.json"
        )

    def _open(self, shard_id: str, stats: CacheStats) -> _Shard | None:
        meta_path = self.path / f"{shard_id}.json"
        keys_path = self.path / f"{shard_id}.keys.npy"
        vecs_path = self.path / f"{shard_id}.vecs.npy"
        try:
            meta = json.loads(meta_path.read_text())
            if (
                sha256_file(keys_path) != meta["keys_sha256"]
                or sha256_file(vecs_path) != meta["vectors_sha256"]
            ):
                raise ValueError("checksum mismatch")
            keys = np.load(keys_path)
            vectors = np.load(vecs_path, mmap_mode="r")
            if keys.shape != (meta["n"], KEY_BYTES) or vectors.shape != (meta["n"], meta["dim"]):
                raise ValueError("shape mismatch")
            if keys.dtype != np.uint8 or vectors.dtype != np.float32:
                raise ValueError("dtype mismatch")
            if not _all_finite(vectors):
                raise ValueError("non-finite vectors")
        except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError):
            self._quarantine(shard_id)
            stats.corrupt_shards.append(shard_id)
            return None
        return _Shard(keys=keys, vectors=vectors)

    def _quarantine(self, shard_id: str) -> None:
        """Set a shard's files aside (where the directory allows; its texts are re-embedded
        either way)."""
        for suffix in SHARD_SUFFIXES:
            p = self.path / f"{shard_id}{suffix}"
            with contextlib.suppress(OSError):
                if p.exists():
                    os.replace(p, p.with_name(p.name + ".corrupt"))

    def lookup(
        self, keys: np.ndarray, stats: CacheStats, cut: Cut | None = None
    ) -> tuple[np.ndarray, np.ndarray | None, int | None]:
        """(found bool [n], vectors float32 [n, width] with found rows filled, or None, the
        cached vectors' dimension, or None): ``width`` is their dimension, or with ``cut`` its
        first columns (copied alone). CacheDimensionError when the shards holding ``keys``
        disagree on the dimension."""
        found = np.zeros(len(keys), dtype=bool)
        out: np.ndarray | None = None
        seen: int | None = None
        wanted = keys.view(np.uint64)  # [n, 2]
        for shard_id in self._shard_ids():
            if shard_id not in self._opened:
                self._opened[shard_id] = self._open(shard_id, stats)
            shard = self._opened[shard_id]
            if shard is None or len(shard.keys) == 0:
                continue
            have = shard.keys.view(np.uint64)
            order = np.lexsort((have[:, 1], have[:, 0]))
            first = have[order, 0]
            todo = np.flatnonzero(~found)
            pos = np.searchsorted(first, wanted[todo, 0])
            pos = np.minimum(pos, len(first) - 1)
            rows = order[pos]
            match = (have[rows, 0] == wanted[todo, 0]) & (have[rows, 1] == wanted[todo, 1])
            if not match.any():
                continue
            dim = int(shard.vectors.shape[1])
            if seen is None:
                seen = dim
                out = vector_matrix(len(keys), cut.width(dim) if cut is not None else dim)
            elif dim != seen:
                raise CacheDimensionError(self, seen, dim, "other cached vectors are")
            assert out is not None
            copy_rows(out, todo[match], shard.vectors, rows[match])
            found[todo[match]] = True
            if found.all():
                break
        return found, out, seen

    def store(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Write one new shard (never modifies an existing one)."""
        if len(keys) == 0:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(self.path)
        ident = self.path / "identity.json"
        if not ident.exists():
            text = json.dumps(self.identity, indent=1, sort_keys=True, default=str)
            atomic_write(ident, lambda f: f.write(text.encode("utf-8")))
        shard_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:12]}"
        keys_path = self.path / f"{shard_id}.keys.npy"
        vecs_path = self.path / f"{shard_id}.vecs.npy"
        _save_array(vecs_path, np.ascontiguousarray(vectors, dtype=np.float32))
        _save_array(keys_path, np.ascontiguousarray(keys, dtype=np.uint8))
        meta = {
            "n": len(keys),
            "dim": int(vectors.shape[1]),
            "keys_sha256": sha256_file(keys_path),
            "vectors_sha256": sha256_file(vecs_path),
        }
        # the shard exists from this write's rename on
        data = json.dumps(meta).encode("utf-8")
        atomic_write(self.path / f"{shard_id}.json", lambda f: f.write(data))
        os.utime(self.path)


class CachedEmbedder:
    """Wraps an embedder: texts already in the cache are read, only the others are embedded.
    With ``cut`` (``model.truncate_dim``), ``inner`` embeds at the model's full dimension and
    what it returns or the cache holds is cut on read (the module docstring)."""

    def __init__(self, inner: Embedder, root: Path, cut: Cut | None = None) -> None:
        self.inner = inner
        self.root = root
        self.cut = cut
        self.stats: dict[str, CacheStats] = {}
        self.warnings: list[str] = []  # what the cache could not do; the run went on without it
        self._namespace: Namespace | None = None
        self._failed: set[str] = set()  # "read" / "write": warned once, not tried again
        # "cache" / "model": the dimension each gave this run; "named": the identity's
        self._dims: dict[str, int] = {}

    def warn(self, action: str, error: OSError) -> None:
        """Record that the cache cannot ``action`` ("read", "write"); later tries are skipped."""
        if action not in self._failed:
            self._failed.add(action)
            self.warnings.append(
                f"cannot {action} the embedding cache {self.root}: {error.strerror or error} "
                f"({error.filename or self.root}); this run goes on without "
                f"{'reading' if action == 'read' else 'writing'} it"
            )

    def identity(self) -> dict[str, Any]:
        """The inner embedder's identity; with a cut, naming its ``truncate_dim`` (the
        fingerprint of a run cut on read is that of a truncated encode)."""
        identity = self.inner.identity()
        return identity if self.cut is None else {**identity, "truncate_dim": self.cut.dim}

    @property
    def namespace(self) -> Namespace:
        if self._namespace is None:
            self._namespace = Namespace(self.root, self.cache_identity())
        return self._namespace

    def cache_identity(self) -> dict[str, Any]:
        """What names the namespace (engines/protocols.LocalModel)."""
        return cache_identity(self.inner)

    @property
    def digest(self) -> str:
        """The digest of what decides the vectors this wrapper returns: the namespace's, or with
        a cut that of its identity naming ``truncate_dim`` (what a truncated encode's namespace
        was named by; the vectors are read from the full ones' namespace)."""
        if self.cut is None:
            return self.namespace.digest
        return json_digest({**self.cache_identity(), "truncate_dim": self.cut.dim})

    def _keys(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        """The cache keys of ``texts`` (engines/protocols.key_texts)."""
        return text_keys(key_texts(self.inner, texts, kind))

    def keys(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        """uint8 [n, 16]: the cache keys of ``texts`` (what `evalret embed --shard` deals out);
        the same text of two kinds has one key when it is fed to the model the same way."""
        return self._keys(texts, kind)

    def cached(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        """bool [n]: which ``texts`` the cache holds (nothing embedded, no statistics kept)."""
        found, _, _ = self._lookup(self._keys(texts, kind), CacheStats())
        return found

    def embed(
        self, texts: Sequence[str], kind: Kind, progress: Progress | None = None
    ) -> np.ndarray:
        stats = self.stats.setdefault(kind, CacheStats())
        keys = self._keys(texts, kind)
        found, vectors, dim = self._lookup(keys, stats)
        stats.hits += int(found.sum())
        stats.misses += int((~found).sum())
        if progress is not None and found.any():
            progress(int(found.sum()))
        missing = np.flatnonzero(~found)
        if dim is not None:
            self._check_dim(dim, cached=True)
        todo = [texts[int(i)] for i in missing]
        for rows, fresh in self._fresh(todo, kind, progress) if todo or vectors is None else ():
            self._check_dim(fresh.shape[1], cached=False)
            self._store(keys[missing[rows]], fresh)
            width = self._width(fresh.shape[1], len(rows))
            if vectors is None:
                vectors = vector_matrix(len(texts), width)
            vectors[missing[rows]] = fresh[:, :width]
        assert vectors is not None  # _fresh yields at least once
        return vectors if self.cut is None else self.cut.finish(vectors)

    def _width(self, dim: int, rows: int) -> int:
        """The columns a run keeps of ``rows`` fresh ``dim``-dimensional vectors: all, or the
        cut's (none of nothing embedded is too few)."""
        if self.cut is None:
            return dim
        return self.cut.width(dim) if rows else min(dim, self.cut.dim)

    def _check_dim(self, dim: int, cached: bool) -> None:
        """CacheDimensionError when cached vectors (``cached``) and the model's own, or cached
        vectors of two lookups, or cached vectors and ``truncate_dim`` disagree on the
        dimension."""
        seen_cache, seen_model = self._dims.get("cache"), self._dims.get("model")
        if not cached:
            if seen_cache is not None and seen_cache != dim:
                raise CacheDimensionError(self.namespace, seen_cache, dim, "the model returns")
            self._dims["model"] = dim
            return
        if "named" not in self._dims:  # the identity's truncate_dim, read once (0: none)
            named = self.inner.identity().get("truncate_dim")
            self._dims["named"] = named if isinstance(named, int) else 0
        for other, source in (
            (seen_model, "the model returns"),
            (seen_cache, "other cached vectors are"),
            (self._dims["named"] or None, "model.truncate_dim asks for"),
        ):
            if other is not None and other != dim:
                raise CacheDimensionError(self.namespace, dim, other, source)
        self._dims["cache"] = dim

    def _fresh(
        self, texts: list[str], kind: Kind, progress: Progress | None
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(positions in ``texts``, vectors) to store: batch by batch as each is answered when
        the embedder streams (``embed_batches``: an API, whose every answered batch is kept
        even if the run stops), else all at once."""
        if not isinstance(self.inner, StreamingEmbedder) or not texts:
            yield np.arange(len(texts)), self.inner.embed(texts, kind, progress)
            return
        for rows, vectors in self.inner.embed_batches(texts, kind):
            yield rows, vectors
            if progress is not None:
                progress(len(rows))

    def _lookup(
        self, keys: np.ndarray, stats: CacheStats
    ) -> tuple[np.ndarray, np.ndarray | None, int | None]:
        if "read" not in self._failed:
            try:
                return self.namespace.lookup(keys, stats, self.cut)
            except OSError as e:
                self.warn("read", e)
        return np.zeros(len(keys), dtype=bool), None, None

    def _store(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        if "write" not in self._failed:
            try:
                self.namespace.store(keys, vectors)
            except OSError as e:
                self.warn("write", e)

    def report(self) -> dict[str, Any]:
        return {
            "dir": str(self.root),
            "namespace": self.namespace.digest[:32],
            **{
                kind: {"hits": s.hits, "misses": s.misses, "corrupt_shards": s.corrupt_shards}
                for kind, s in self.stats.items()
            },
            # the inner embedder's own use of the cache directory (an exported model) counts too
            "warnings": [*self.warnings, *model_warnings(self.inner)],
            **({"truncated_from": full} if (full := self.truncated_from) is not None else {}),
        }

    @property
    def truncated_from(self) -> int | None:
        """With a cut, the full dimension the run's vectors were cut from (None: no cut, or
        nothing read or embedded yet)."""
        if self.cut is None:
            return None
        return self._dims.get("cache", self._dims.get("model"))


def check_cache_root(root: Path) -> None:
    """InputError (exit 2) when ``root`` exists and is not a directory: `cache info`, `clear`
    and `prune` would otherwise report an empty cache."""
    if os.path.lexists(root) and not root.is_dir():
        raise InputError(f"the embedding cache directory {root} is not a directory")


def check_cache_writable(namespace: Path) -> None:
    """InputError (exit 2) unless vectors can be written into ``namespace`` (a namespace
    directory of the cache, created if need be): a path that is a file, a directory that cannot
    be written. Checked before embedding by the commands whose job is to fill the cache."""
    try:
        check_writable_dir(namespace, "the embedding cache")
    except InputError as e:
        raise InputError(
            f"{e.summary}: `evalret embed` fills the embedding cache; give --dir (or "
            "cache.dir) a directory it can write"
        ) from None


# the names evalret gives what it keeps in a cache directory (a namespace or an exported model:
# a 32-hex digest; an index: hnsw-<key>.faiss or faiss-<key>.faiss), with their set-aside and
# temporary forms: `cache clear` and `prune` touch nothing else, so a --dir that is not a cache
# (a project's root, with folders of its own named embeddings/ or models/) loses nothing
_NAMESPACE = re.compile(r"[0-9a-f]{32}")
_OWN = {
    "models": re.compile(r"\.?[0-9a-f]{32}(\..*)?"),
    "indexes": re.compile(r"\.?(hnsw|faiss)-[0-9a-f]+\.faiss(\..*)?"),
}


def _namespaces(root: Path) -> list[Path]:
    """The namespace directories of the cache at ``root`` (stray files, junk and directories
    evalret did not name skipped)."""
    base = root / "embeddings"
    try:
        return sorted(
            p
            for p in base.iterdir()
            if _NAMESPACE.fullmatch(p.name) and p.is_dir() and not p.is_symlink()
        )
    except OSError:  # no cache yet, or the path is a file or unreadable
        return []


def _own_entries(root: Path, kind: str) -> list[Path]:
    """What evalret wrote under ``root``/``kind`` (models, indexes), by its names."""
    try:
        return sorted(p for p in (root / kind).iterdir() if _OWN[kind].fullmatch(p.name))
    except OSError:
        return []


def _shard_metas(ns: Path) -> list[Path]:
    return [p for p in ns.glob("*.json") if p.name != "identity.json"]


def _namespace_info(ns: Path) -> dict[str, Any]:
    try:
        identity = json.loads((ns / "identity.json").read_text())
        if not isinstance(identity, dict):
            identity = {}
    except (OSError, ValueError):
        identity = {}
    entries = 0
    for meta in _shard_metas(ns):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            entries += int(json.loads(meta.read_text())["n"])
    size = 0
    for p in ns.iterdir():
        with contextlib.suppress(OSError):
            size += p.stat().st_size if p.is_file() else 0
    return {
        "namespace": ns.name,
        "model": identity.get("name"),
        "settings": {
            **{
                k: identity.get(k)
                for k in ("query_prefix", "document_prefix", "max_seq_length", "truncate_dim")
            },
            # onnx / openvino namespaces name their backend; torch ones predate the key
            **{k: identity[k] for k in ("backend", "precision") if k in identity},
        },
        "entries": entries,
        "bytes": size,
        "shards": len(_shard_metas(ns)),
        "last_used": time.strftime("%Y-%m-%d %H:%M", time.localtime(ns.stat().st_mtime)),
    }


def cache_info(root: Path) -> list[dict[str, Any]]:
    """One entry per namespace: model, entries, bytes, last use. Junk in the cache (stray files,
    unreadable or malformed metadata) is skipped, never an error."""
    out = []
    for ns in _namespaces(root):
        with contextlib.suppress(OSError):
            out.append(_namespace_info(ns))
    return out


def _remove_tree(path: Path, failed: list[str]) -> bool:
    """Remove the directory ``path``; whether it is gone. When it is not, why (a path and its
    cause) is added to ``failed``."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return True
    try:
        shutil.rmtree(path)  # again, to learn what stays and why
    except OSError as e:
        failed.append(f"{e.filename or path}: {e.strerror or e}")
    return not os.path.lexists(path)


def clear_cache(root: Path) -> int:
    """Remove every cached embedding, exported ONNX model and HNSW graph; returns the number of
    embedding namespaces removed. InputError (exit 2) naming the first path that could not be
    removed (a read-only cache), after removing what it could."""
    failed: list[str] = []
    for entry in [*_own_entries(root, "models"), *_own_entries(root, "indexes")]:
        if entry.is_dir() and not entry.is_symlink():
            _remove_tree(entry, failed)
        else:
            try:
                entry.unlink()
            except OSError as e:
                failed.append(f"{entry}: {e.strerror or e}")
    for kind in _OWN:  # the folder itself, once nothing is left in it
        with contextlib.suppress(OSError):
            (root / kind).rmdir()
    removed = sum(_remove_tree(ns, failed) for ns in _namespaces(root))
    if failed:
        raise InputError(
            f"cannot clear the embedding cache {root} ({removed} embedding set(s) removed): "
            f"cannot remove {failed[0]}"
        )
    return removed


def _remove_orphans(ns: Path) -> int:
    """Remove the vector and key files of shards whose metadata is gone (a killed write, or a
    deleted .json), once older than STALE_TEMP_S: a live writer writes its metadata last."""
    removed = 0
    for suffix in (".keys.npy", ".vecs.npy"):
        for p in ns.glob(f"*{suffix}"):
            shard_id = p.name[: -len(suffix)]
            if not (ns / f"{shard_id}.json").exists() and is_stale(p):
                with contextlib.suppress(OSError):
                    p.unlink()
                    removed += 1
    return removed


def _prune_namespace(ns: Path, removed: dict[str, int]) -> None:
    for p in ns.glob("*.corrupt"):
        with contextlib.suppress(OSError):
            p.unlink()
            removed["corrupt_files"] += 1
    removed["temp_files"] += remove_stale_temps(ns)
    removed["orphan_files"] += _remove_orphans(ns)


def check_prune_days(days: float) -> None:
    """Refuse (InputError) a negative, non-finite or absurd --days: ``prune --days -5`` would
    otherwise remove every embedding set."""
    if not (math.isfinite(days) and 0 <= days <= MAX_PRUNE_DAYS):
        raise InputError(f"--days {days:g}: give a number of days from 0 to {MAX_PRUNE_DAYS}")


def prune_cache(root: Path, older_than_days: float) -> dict[str, int]:
    """Remove namespaces unused for ``older_than_days``, corrupt shards, stale temporary files
    (of embeddings and HNSW graphs) and orphan vector files of shards whose metadata is gone.
    InputError (exit 2) naming the first embedding set that could not be removed (a read-only
    cache), after removing what it could."""
    check_prune_days(older_than_days)
    removed = {"namespaces": 0, "corrupt_files": 0, "temp_files": 0, "orphan_files": 0}
    failed: list[str] = []
    cutoff = time.time() - older_than_days * 86400
    for ns in _namespaces(root):
        try:
            unused = ns.stat().st_mtime < cutoff
        except OSError:
            continue
        if unused:
            removed["namespaces"] += _remove_tree(ns, failed)
        else:
            _prune_namespace(ns, removed)
    for directory in (root / "indexes", root / "models"):
        with contextlib.suppress(OSError):
            removed["temp_files"] += remove_stale_temps(directory)
    if failed:
        raise InputError(
            f"cannot prune the embedding cache {root} ({removed['namespaces']} embedding set(s) "
            f"removed): cannot remove {failed[0]}"
        )
    return removed
