"""The file `evalret embed --export FILE` writes: evalret's document vectors, to load a vector
store with exactly the vectors a run searches.

One row per document, in the golden set's order, four columns:

- ``id``: the document id (string);
- ``vector``: its float32 vector, the model's dimension (after ``model.truncate_dim``), as the
  cache holds it and the exact index searches it (normalised when ``model.normalize``);
- ``text_sha256``: the hex sha256 of the document's text as evalret embedded it, UTF-8, before
  the model's document prefix (the golden set's ``title`` and ``text`` joined by one space and
  stripped; the prefix is in the model identity): hash your document's text the same way and a
  row whose hash differs is stale;
- ``metadata``: the document's ``metadata`` as written in the corpus file, as JSON text (every
  value kept: nested objects, lists, unicode; ``{}`` for a document without one). A string column
  loads alike into pandas, LanceDB, Qdrant payloads and Chroma (``json.loads`` it; Chroma takes
  flat scalar values only), where a struct column would need one schema for every document.

The model identity (``model_identity`` in commands/embed.py: name, dimension, normalisation, the
prefixes as fed, the metric, the fingerprint of the vectors, their cache namespace and the
embedder's whole identity) travels in the file: Parquet key-value metadata under the key
``evalret`` (JSON), an ``.npz`` array ``evalret`` (a 0-d string holding the same JSON).

The format follows the suffix: ``.parquet`` (through pyarrow: ``vector`` a fixed-size list of
float32) or ``.npz`` (numpy: ``id``, ``text_sha256``, ``metadata`` string arrays, ``vector`` a
float32 [n, dim] matrix; no pickled object, ``np.load`` reads it with ``allow_pickle=False``).
Nothing time-dependent is written (the zip entries of an ``.npz`` carry a fixed date), so the same
vectors give the same bytes. The file is written whole or not at all (data/atomic.py).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np

from evalret.data.atomic import atomic_write, write_target
from evalret.errors import InputError

ExportFormat = Literal["parquet", "npz"]
EXPORT_FORMATS: dict[str, ExportFormat] = {".parquet": "parquet", ".npz": "npz"}
METADATA_KEY = "evalret"  # the Parquet key-value metadata key / the .npz array of the identity
EXPORT_VERSION = 1  # the layout above; a reader checks it
ROW_GROUP = 8192  # rows per Parquet row group (and per progress step)
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip entry holds: no clock in the file


def export_format(path: Path) -> ExportFormat:
    """The format ``path``'s suffix asks for; InputError (exit 2) naming both for any other."""
    fmt = EXPORT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"--export {path}: the file's suffix chooses its format: .parquet or .npz, "
            f"not {path.suffix or '(none)'!r}"
        )
    return fmt


def text_sha256(text: str) -> str:
    """The ``text_sha256`` of a document text (the module docstring)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def metadata_json(value: Any) -> str:
    """The ``metadata`` column of a document whose metadata is ``value`` (None: none): its JSON
    text, key order and unicode kept as written."""
    return json.dumps({} if value is None else value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class ExportRows:
    """The rows of an export, one per document, and the model identity it carries."""

    ids: Sequence[str]
    vectors: np.ndarray  # float32 [n, dim]
    text_sha256: Sequence[str]
    metadata: Sequence[str]  # JSON text
    model: dict[str, Any]

    def identity_json(self) -> str:
        """What the file carries under ``evalret``: the layout version, the row count and the
        model identity, as sorted JSON."""
        body = {"format": EXPORT_VERSION, "rows": len(self.ids), "model": self.model}
        return json.dumps(body, sort_keys=True, ensure_ascii=False, default=str)


def _parquet(rows: ExportRows, f: BinaryIO, progress: Callable[[int], None] | None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    dim = int(rows.vectors.shape[1])
    schema = pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
            pa.field("text_sha256", pa.string(), nullable=False),
            pa.field("metadata", pa.string(), nullable=False),
        ],
        metadata={METADATA_KEY: rows.identity_json()},
    )
    with pq.ParquetWriter(f, schema) as writer:
        for lo in range(0, len(rows.ids), ROW_GROUP):
            hi = min(lo + ROW_GROUP, len(rows.ids))
            flat = np.ascontiguousarray(rows.vectors[lo:hi], dtype=np.float32).reshape(-1)
            batch = pa.record_batch(
                [
                    pa.array(rows.ids[lo:hi], pa.string()),
                    pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), dim),
                    pa.array(rows.text_sha256[lo:hi], pa.string()),
                    pa.array(rows.metadata[lo:hi], pa.string()),
                ],
                schema=schema,
            )
            writer.write_batch(batch, row_group_size=ROW_GROUP)
            if progress is not None:
                progress(hi - lo)


def _strings(values: Sequence[str]) -> np.ndarray:
    """A numpy unicode array of ``values`` (never an object array: no pickle)."""
    width = max((len(v) for v in values), default=0)
    return np.array(list(values), dtype=f"<U{max(width, 1)}")


def _npz(rows: ExportRows, f: BinaryIO, progress: Callable[[int], None] | None) -> None:
    arrays = {
        "id": _strings(rows.ids),
        "vector": np.ascontiguousarray(rows.vectors, dtype=np.float32),
        "text_sha256": _strings(rows.text_sha256),
        "metadata": _strings(rows.metadata),
        METADATA_KEY: np.array(rows.identity_json()),
    }
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_DATE)
            info.external_attr = 0o644 << 16
            with archive.open(info, "w", force_zip64=True) as out:
                np.lib.format.write_array(out, array, allow_pickle=False)
            if name == "vector" and progress is not None:
                progress(len(rows.ids))


def check_export_target(path: Path) -> None:
    """InputError (exit 2) unless ``path`` has a known suffix and can be written (before any
    text is embedded)."""
    from evalret.data.atomic import check_writable_file

    export_format(path)
    check_writable_file(path, "--export")


def write_export(
    path: Path, rows: ExportRows, progress: Callable[[int], None] | None = None
) -> None:
    """Write ``rows`` to ``path`` in the format its suffix chooses, whole or not at all;
    ``progress`` is told the rows written as they are. InputError (exit 2) naming the path when
    it cannot be written."""
    fmt = export_format(path)
    writer = _parquet if fmt == "parquet" else _npz
    target, in_place = write_target(path, "--export")
    try:
        if in_place:  # a device or a pipe: written where it is
            with open(target, "wb") as f:
                writer(rows, f, progress)
        else:
            atomic_write(target, lambda f: writer(rows, f, progress))
    except OSError as e:
        raise InputError(f"cannot write --export {path}: {e.strerror or e}") from None


def read_export(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(columns, what the file carries under ``evalret``) of an export: ``id``,
    ``text_sha256``, ``metadata`` as lists of str, ``vector`` as float32 [n, dim]. For tests
    and for a user's loader to copy; not used by evalret itself."""
    if export_format(path) == "npz":
        with np.load(path, allow_pickle=False) as data:
            columns = {k: data[k] for k in ("id", "vector", "text_sha256", "metadata")}
            carried = json.loads(str(data[METADATA_KEY]))
        for k in ("id", "text_sha256", "metadata"):
            columns[k] = [str(v) for v in columns[k]]
        return columns, carried
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    carried = json.loads(meta[METADATA_KEY.encode()].decode("utf-8"))
    dim = table.schema.field("vector").type.list_size
    flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    columns = {
        "id": table.column("id").to_pylist(),
        "vector": np.asarray(flat, dtype=np.float32).reshape(-1, dim),
        "text_sha256": table.column("text_sha256").to_pylist(),
        "metadata": table.column("metadata").to_pylist(),
    }
    return columns, carried
