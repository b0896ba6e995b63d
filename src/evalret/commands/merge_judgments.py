"""`evalret judgments merge`: its options checked, what it reads and writes declared for the
input guard, then the merge (pipeline/merge.py; the new golden set is written by
data.goldenset.write)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalret.core.judgments import MergeOutcome
from evalret.data.config import GoldenSetConfig
from evalret.data.judgments import Scale, parse_scale
from evalret.data.paths import Declared, Input, Output, guard
from evalret.pipeline.merge import MergeOptions, check_policy, merge_judgments, mergeable_format


def merge_command(
    files: Sequence[Path],
    into: GoldenSetConfig,
    out: Path,
    scale: Scale,
    options: MergeOptions,
) -> MergeOutcome:
    """`evalret judgments merge`: read, plan, write the new golden set into ``out`` (whole or
    not at all), and check that it loads."""
    fmt = mergeable_format(into)
    reads = [Input("the annotation file (FILES)", f) for f in files]
    reads.append(Input("the golden set (--into)", into.path, tree=into.path.is_dir()))
    guard(Declared("judgments merge", reads, [Output("--out", out, "tree")]))
    return merge_judgments(files, into, out, scale, options, fmt)


def merge_judgments_command(
    *,
    files: Sequence[Path],
    into: Path,
    out: Path,
    scale: str = "0-3",
    policy: str = "median",
    min_annotators: int = 1,
    drop_below: float | None = None,
    overwrite: bool = False,
    golden_format: str | None = None,
    split: str | None = None,
) -> MergeOutcome:
    """`evalret judgments merge` from its options as given: the policy and scale checked (exit 2
    naming the option), the golden set ``into`` read in ``golden_format`` (default auto) and
    ``split`` (default test), then ``merge_command``."""
    chosen = check_policy(policy)
    parsed = parse_scale(scale)
    cfg = GoldenSetConfig(path=into, format=golden_format or "auto", split=split or "test")
    options = MergeOptions(chosen, min_annotators, drop_below, overwrite)
    return merge_command(files, cfg, out, parsed, options)
