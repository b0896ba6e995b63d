"""The source of ``inv_plugin.py``, the plug-in module every harness world holds: a hashing
encoder (``make_encoder``, provider python), a Python retriever (``search``, an index of type
python) and a Python reranker (``rerank``, of a rerank index over ``search``), all
deterministic and cheap, so that `run`, `embed`, `sweep`, `pool`, `leakage` and `hook` need no
real model.

What they do is chosen per case by the environment, read at call time (and at import for
``exit-at-import``): ``INV_PLUGIN_MODE`` names a misbehaviour and ``INV_PLUGIN_TARGET`` where it
happens (import, factory, identity, encode, setup, search, close, rerank: ``setup`` and ``close``
are the retriever's hooks, and ``search`` checks that it is handed the setup's value);
``INV_PLUGIN_READY`` is a file the plug-in creates just before it hangs, so that a test knows when
to send its signal. The encoder's modes ``huge`` and ``tiny`` answer its vectors times 2**100 or
2**-100: finite float32 whose squares overflow or underflow, which normalize to the same unit
vectors. The hashing is the same as ``inv_http.embed_texts`` so that an HTTP model scores as the
Python one.
"""

SOURCE = r'''
import hashlib
import os
import sys
import time
import warnings

import numpy as np

DIM = 32


def _misbehave(where):
    """Do what INV_PLUGIN_MODE asks when INV_PLUGIN_TARGET is ``where``."""
    if os.environ.get("INV_PLUGIN_TARGET") != where:
        return
    mode = os.environ.get("INV_PLUGIN_MODE", "ok")
    if mode == "exit-0":
        sys.exit(0)
    if mode == "exit-msg":
        raise SystemExit("plug-in says goodbye")
    if mode == "raise":
        raise RuntimeError("plug-in exploded")
    if mode == "print":
        print("GATE PASSED [inv_plugin]")
        print("::notice::all checks passed [inv_plugin]")
    if mode == "warn":
        warnings.warn("GATE PASSED [inv_plugin] (a warning)", UserWarning, stacklevel=1)
    if mode == "hang":
        ready = os.environ.get("INV_PLUGIN_READY")
        if ready:
            with open(ready, "w") as f:
                f.write(str(os.getpid()))
        time.sleep(600)


def hash_vectors(texts, dim=DIM):
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for i, text in enumerate(texts):
        for token in text.lower().split():
            h = hashlib.sha256(token.encode()).digest()
            out[i, int.from_bytes(h[:4], "little") % dim] += 1.0
    return out


class HashEncoder:
    def __init__(self, dim):
        self.dim = dim

    def identity(self):
        _misbehave("identity")
        return {"kind": "sha256 bag of words", "dim": self.dim}

    def encode(self, texts, kind):
        _misbehave("encode")
        vectors = hash_vectors(texts, self.dim)
        if os.environ.get("INV_PLUGIN_TARGET") == "encode":
            mode = os.environ.get("INV_PLUGIN_MODE", "ok")
            if mode == "huge":  # finite float32, squares past float32: the same unit vectors
                return vectors * np.float32(2.0**100)
            if mode == "tiny":
                return vectors * np.float32(2.0**-100)
        return vectors


def make_encoder(dim=DIM):
    _misbehave("factory")
    return HashEncoder(dim)


_CORPUS = None


def _corpus():
    global _CORPUS
    if _CORPUS is None:
        import json

        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "golden", "corpus.jsonl"), encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        texts = [row.get("title", "") + " " + row["text"] for row in rows]
        _CORPUS = [row["id"] for row in rows], texts
    return _CORPUS


def _rankings(query_texts, depth):
    ids, texts = _corpus()
    docs = hash_vectors(texts)
    queries = hash_vectors(list(query_texts))
    scores = queries @ docs.T
    out = []
    for row in scores:
        top = np.argsort(-row, kind="stable")[:depth]
        out.append([(ids[j], float(row[j])) for j in top])
    return out


def setup():
    _misbehave("setup")
    return {"client": "inv"}


def close(state):
    _misbehave("close")


def search(query_ids, query_texts, query_vectors, depth, state=None):
    assert state == {"client": "inv"}, f"the setup's value did not arrive: {state!r}"
    _misbehave("search")
    mode = os.environ.get("INV_PLUGIN_MODE", "ok")
    ranked = _rankings(query_texts, depth)
    if os.environ.get("INV_PLUGIN_TARGET") != "search":
        return ranked
    if mode == "lazy-raise":
        def lazy():
            yield ranked[0]
            raise RuntimeError("plug-in exploded lazily")
        return lazy()
    if mode == "overflow":
        return [[(doc, 10**400) for doc, _ in one] for one in ranked]
    if mode == "str-score":
        return [[(doc, str(score)) for doc, score in one] for one in ranked]
    if mode == "bool-score":
        return [[(doc, True) for doc, _ in one] for one in ranked]
    return ranked


def rerank(query, documents):
    _misbehave("rerank")
    words = set(query.lower().split())
    scores = [float(len(words & set(d.lower().split()))) for d in documents]
    if os.environ.get("INV_PLUGIN_TARGET") != "rerank":
        return scores
    mode = os.environ.get("INV_PLUGIN_MODE", "ok")
    if mode == "lazy-raise":
        def lazy():
            yield scores[0]
            raise RuntimeError("plug-in exploded lazily")
        return lazy()
    if mode == "overflow":
        return [10**400 for _ in scores]
    if mode == "str-score":
        return [str(s) for s in scores]
    if mode == "bool-score":
        return [True for _ in scores]
    if mode == "short":
        return scores[:-1]
    return scores


_misbehave("import")
'''
