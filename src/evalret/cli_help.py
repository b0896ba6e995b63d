"""What `evalret --help` and each command's help show besides the commands' own text: the sections
the top-level help lists its commands in, the "Start here" block that ends it, and every
command's and group's examples (command path -> lines, as pasted in a shell; a ``#`` line says
what the next one does). ``cli_runtime`` gives each group and command its own as it registers
it (``subgroup``, ``command``). Every command has examples, and every example parses as the
command line it shows (tests/test_help.py). Standard library only: `evalret --help` stays light.
"""

from __future__ import annotations

# the top-level help's sections, in order: (title, command names in the order listed)
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Gate a change",
        ("run", "compare", "score", "trec_eval", "report", "baseline", "history", "hook"),
    ),
    ("Golden set", ("golden", "validate", "leakage")),
    ("Judgments", ("pool", "judge", "annotate", "judgments")),
    ("Indexes and embeddings", ("sweep", "embed")),
    ("Setup and maintenance", ("init", "config", "cache")),
)

START_HERE = (
    "# try it now: the demo golden set packaged with evalret",
    "evalret run",
    "# set up a repository: a config and a golden-set template (--action-ref: the CI workflow)",
    "evalret init",
    "# once, on purpose: save the baseline (then commit it)",
    "evalret run --save-baseline baselines/evalret.json",
    "# every change: gated against it (exit 1 when a check fails)",
    "evalret run",
    "# any command's options and examples",
    "evalret run --help",
)

EXAMPLES: dict[str, tuple[str, ...]] = {
    "run": (
        "# the demo golden set, or ./evalret.yaml when present",
        "evalret run",
        "evalret run -c evalret.yaml --save-baseline baselines/evalret.json",
        "evalret run -c evalret.yaml --baseline baselines/evalret.json -o reports",
        "# the same model cut to 256 dimensions (from the cached vectors)",
        "evalret run -c evalret.yaml --dimension 256",
        "# what would be embedded, and its cost; nothing runs",
        "evalret run -c evalret.yaml --dry-run",
    ),
    "embed": (
        "# one of 4 CI jobs; after all 4, `evalret run` embeds nothing",
        "evalret embed -c evalret.yaml --shard 1/4",
        "evalret embed -c evalret.yaml --export vectors.parquet",
    ),
    "score": (
        "evalret score qrels.txt bm25=run.bm25.trec dense=run.dense.trec",
        "evalret score golden_sets/mine run.trec --baseline baselines/trec.json",
    ),
    "trec_eval": (
        "# trec_eval's default measures, or its whole set per query",
        "evalret trec_eval qrels.txt run.trec",
        "evalret trec_eval -q -m all_trec -c qrels.txt run.trec",
        "evalret trec_eval -m P.5,10 -m ndcg_cut.10 -l 2 qrels.txt run.trec",
    ),
    "compare": (
        "evalret compare old.yaml new.yaml",
        "evalret compare old/report.json new/report.json -o reports/compare",
        "evalret compare old.yaml new.yaml --primary recall@10 --fail-on-regression",
    ),
    "pool": (
        "evalret pool evalret.yaml -k 10 --out pool.jsonl",
        "evalret pool old.yaml new.yaml --gold-fraction 0.1 --out pool.jsonl",
    ),
    "judge": (
        "# what it would ask and cost; nothing is sent",
        "evalret judge pool.jsonl -c evalret.yaml --dry-run --out llm.jsonl",
        "evalret judge pool.jsonl -c evalret.yaml --out llm.jsonl",
        "evalret judge -c evalret.yaml --from-report reports/report.json -o llm.jsonl",
    ),
    "annotate": (
        "evalret annotate pool.jsonl --annotator alice",
        "evalret annotate pool.jsonl -a bob --scale 0-1 --port 0 --no-browser",
    ),
    "report": (
        "evalret report reports/report.json",
        "evalret report reports/compare/compare.json --out site",
    ),
    "init": (
        "evalret init",
        "evalret init --pre-commit --watch src/retrieval",
    ),
    "hook": ("evalret hook -c evalret.yaml",),
    "validate": (
        "evalret validate golden_sets/mine",
        "evalret validate evalret.yaml --report reports/report.json",
        "evalret validate qrels.txt --json",
    ),
    "leakage": (
        "evalret leakage --train train.jsonl evalret.yaml",
        "evalret leakage --train train.txt --no-embedding --max-fraction 0.01",
    ),
    "sweep": (
        "evalret sweep --set indexes.hnsw.ef_search=16,32,64 -o sweep",
        "evalret sweep -c evalret.yaml --set indexes.hnsw.m=16,32 -o sweep",
    ),
    "baseline": ("evalret baseline show baselines/evalret.json",),
    "baseline show": ("evalret baseline show baselines/evalret.json",),
    "cache": ("evalret cache info", "evalret cache prune --days 7"),
    "cache info": ("evalret cache info", "evalret cache info --dir .cache/evalret"),
    "cache clear": ("evalret cache clear --dir .cache/evalret",),
    "cache prune": ("evalret cache prune --days 7",),
    "history": (
        "evalret history add reports/report.json --label main --mark-baseline",
        "evalret history report -o trend.html",
    ),
    "history add": (
        "evalret history add reports/report.json --label main --mark-baseline",
        "evalret history add reports/report.json -c evalret.yaml --commit abc1234",
    ),
    "history show": ("evalret history show --metric ndcg@10 --index exact --last 20",),
    "history report": ("evalret history report -c evalret.yaml -o trend.html",),
    "judgments": (
        "evalret judgments agreement alice.jsonl bob.jsonl",
        "evalret judgments merge alice.jsonl bob.jsonl --into golden --out merged",
    ),
    "judgments agreement": (
        "evalret judgments agreement alice.jsonl bob.jsonl",
        "evalret judgments agreement alice.jsonl bob.jsonl --out agreement.json",
    ),
    "judgments merge": (
        "evalret judgments merge alice.jsonl bob.jsonl --into golden --out merged",
        "evalret judgments merge a.jsonl b.jsonl --into golden -o merged --policy mean",
    ),
    "config": ("evalret config schema > evalret.schema.json",),
    "config schema": ("evalret config schema > evalret.schema.json",),
    "golden": (
        "evalret golden from-logs log.jsonl --corpus corpus.jsonl --out draft",
        "evalret golden judge draft -c evalret.yaml --out golden_sets/new",
        "evalret golden doctor -c evalret.yaml",
    ),
    "golden judge": (
        "# what it would ask and cost; nothing is sent",
        "evalret golden judge draft -c evalret.yaml --dry-run --out golden_sets/new",
        "evalret golden judge draft -c evalret.yaml --out golden_sets/new",
    ),
    "golden from-logs": (
        "evalret golden from-logs log.jsonl --corpus corpus.jsonl --out draft",
        "evalret golden from-logs log.csv --corpus corpus.jsonl --n 500 -o draft",
    ),
    "golden synth": (
        "evalret golden synth -c evalret.yaml --corpus corpus.jsonl --n 50 -o draft",
        "# what it would ask and cost; nothing is sent",
        "evalret golden synth -c evalret.yaml --corpus docs.jsonl --n 9 -o x --dry-run",
    ),
    "golden doctor": (
        "evalret golden doctor -c evalret.yaml",
        "evalret golden doctor -c evalret.yaml --log log.jsonl --out doctor",
    ),
}
