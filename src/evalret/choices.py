"""The literals the command line and the library share, stated once: the choices an option
accepts and the defaults it shows are the library's own, never a copy kept equal by a test.

This module imports the standard library only (it sits below every layer, with ``errors``), so
that ``evalret.cli_options`` reads it and `evalret --help` still imports neither numpy nor
pydantic (tests/test_cli.py, tests/test_score_startup.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

# the config `evalret run` reads without --config when the working directory holds it, and the one
# `evalret hook` gates by default (the file `evalret init` writes)
DEFAULT_CONFIG = Path("evalret.yaml")

# a golden set's format (config golden_set.format, `--format`): auto detects native, BEIR or TREC
GoldenFormatName = Literal["auto", "native", "beir", "trec"]
GOLDEN_FORMATS: tuple[str, ...] = get_args(GoldenFormatName)

# what `evalret pool --output-format` writes: JSON Lines, or a Label Studio import (a JSON list)
PoolFormat = Literal["jsonl", "label-studio"]
POOL_FORMATS: tuple[str, ...] = get_args(PoolFormat)

# the multiple-comparison correction (config compare.correction, `compare --correction`)
Correction = Literal["holm", "bonferroni", "bh", "none"]

# a margin the paired difference's bounds must prove (config gate thresholds' mode, `compare
# --margin-mode`): non-inferiority (the lower bound above -margin) or equivalence (both within
# ±margin, TOST)
MarginMode = Literal["non_inferiority", "equivalence"]
# a gate threshold's mode: drop (max_drop, max_drop_pct) or one of the margin modes above
ThresholdMode = Literal["drop", "non_inferiority", "equivalence"]

# how `evalret leakage --train` is read: by suffix or first line (auto), JSON Lines, or plain text
TrainFormat = Literal["auto", "jsonl", "text"]

# how queries without a relevant document count (config queries_without_relevant,
# `score --queries-without-relevant`): left out of the means, or scored (trec_eval)
WithoutRelevant = Literal["exclude", "zero"]

# how annotators' grades merge into one (`judgments merge --policy`)
Policy = Literal["median", "majority", "mean"]
POLICIES: tuple[Policy, ...] = get_args(Policy)

# randomization-test resamples `evalret compare --samples` accepts at most: a million already
# resolves p-values to 1e-6, and the test's time grows linearly with them
MAX_SAMPLES = 1_000_000

# the newest history entries `history show` and `history report` draw (`--last`; 0: all)
SHOWN_ENTRIES = 200

# the retrievers whose top k `evalret golden judge --retrievers` pools: the config's model with
# exact search, BM25, and their reciprocal rank fusion
PoolRetriever = Literal["dense", "bm25", "hybrid"]
POOL_RETRIEVERS: tuple[PoolRetriever, ...] = get_args(PoolRetriever)

# how `evalret golden from-logs` reads a query log (`--log-format`): by suffix (auto), plain text
# (one query a line), JSON Lines or CSV
LogFileFormat = Literal["auto", "text", "jsonl", "csv"]

# what `evalret golden from-logs --pii` does with a logged query holding personal data
PiiMode = Literal["drop", "mask", "keep"]

# how `evalret golden from-logs --allocation` shares --n among the traffic strata
Allocation = Literal["proportional", "equal"]
