"""One example per section of the config reference (docs/reference/config.md): a short YAML file
that sets the section's keys to values someone would write, keyed by the section's title as the
reference heads it (``model (provider: openai)``, ``indexes.<name> (type: faiss)``). Each is a
whole config, valid as it stands: tests/test_docs_generated.py loads every one with the config
loader, and fails when a section of the reference has none.
"""

from __future__ import annotations

CONFIG_EXAMPLES: dict[str, str] = {
    "": """\
golden_set: {path: golden_sets/demo}
metrics: [ndcg@10, recall@10, recall@100, mrr@10]
search_depth: 100
ndcg_gain: exponential
relevance_level: 2
queries_without_relevant: zero
""",
    "golden_set": """\
golden_set:
  path: data/scifact
  format: beir
  split: test
""",
    "model (provider: sentence-transformers)": """\
model:
  name: BAAI/bge-small-en-v1.5
  query_prefix: "Represent this sentence for searching relevant passages: "
  truncate_dim: 256
  batch_size: 64
  device: cpu
  backend: onnx
""",
    "model.prompts": """\
model:
  name: intfloat/multilingual-e5-small
  prompts: {query: "query: ", document: "passage: "}
""",
    "model (provider: python)": """\
model:
  provider: python
  name: my-encoder-v2
  callable: my_encoders:Encoder
  options: {checkpoint: models/v2}
  batch_size: 16
""",
    "model (provider: openai)": """\
model:
  provider: openai
  name: text-embedding-3-small
  base_url: https://api.openai.com/v1
  api_key_env: OPENAI_API_KEY
  dimensions: 512
  max_batch: 256
  concurrency: 4
""",
    "model.request_fields": """\
model:
  provider: openai
  name: voyage-3
  base_url: https://api.voyageai.com/v1
  api_key_env: VOYAGE_API_KEY
  request_fields:
    query: {input_type: query}
    document: {input_type: document}
""",
    "indexes": """\
indexes:
  exact: {enabled: true}
  hnsw: {enabled: false}
""",
    "indexes.exact": """\
indexes:
  exact: {enabled: true}
""",
    "indexes.hnsw": """\
indexes:
  hnsw: {m: 16, ef_construction: 100, ef_search: 64, threads: 1}
""",
    "indexes.bm25": """\
indexes:
  bm25: {k1: 1.2, b: 0.75, method: robertson, stemmer: null}
""",
    "indexes.hybrid": """\
indexes:
  hybrid: {dense: hnsw, rrf_k: 60, candidates: 200}
""",
    "indexes.<name> (type: run)": """\
indexes:
  production:
    type: run
    path: runs/production.trec
""",
    "indexes.<name> (type: python)": """\
indexes:
  search_api:
    type: python
    callable: my_search:search
    setup: my_search:connect
    approximate: true
""",
    "indexes.<name> (type: pgvector)": """\
indexes:
  pg:
    type: pgvector
    dsn_env: EVALRET_PG_DSN
    m: 16
    ef_search: 40
    metric: cosine
""",
    "indexes.<name> (type: rerank)": """\
indexes:
  reranked:
    type: rerank
    of: hnsw
    k: 50
    reranker: {provider: cross-encoder, path: cross-encoder/ms-marco-MiniLM-L-6-v2}
""",
    "indexes.<name>.reranker (provider: cross-encoder)": """\
indexes:
  reranked:
    type: rerank
    of: exact
    reranker:
      provider: cross-encoder
      path: cross-encoder/ms-marco-MiniLM-L-6-v2
      batch_size: 32
      max_length: 512
""",
    "indexes.<name>.reranker (provider: python)": """\
indexes:
  reranked:
    type: rerank
    of: exact
    reranker: {provider: python, callable: my_rerank:score}
""",
    "indexes.<name>.reranker (provider: http)": """\
indexes:
  reranked:
    type: rerank
    of: exact
    k: 20
    reranker:
      provider: http
      base_url: https://api.cohere.com/v2
      model: rerank-v3.5
      api_key_env: COHERE_API_KEY
""",
    "indexes.<name> (type: faiss)": """\
indexes:
  ivfpq:
    type: faiss
    factory: IVF16,PQ16
    params: {nprobe: 4}
    seed: 0
""",
    "indexes.<name> (type: quantized)": """\
indexes:
  binary:
    type: quantized
    precision: ubinary
    rescore: 4
""",
    "indexes.<name> (type: store)": """\
indexes:
  qd:
    type: store
    driver: qdrant
    mode: scratch
    metric: cosine
    build: {m: 16, ef_construct: 100}
    search: {hnsw_ef: 64}
""",
    "indexes.<name>.connect": """\
indexes:
  prod:
    type: store
    driver: qdrant
    collection: articles
    connect: {url: "https://qdrant.example.com:6333", api_key_env: QDRANT_API_KEY}
""",
    "indexes.<name>.stability": """\
indexes:
  prod:
    type: store
    driver: qdrant
    collection: articles
    connect: {url: "https://qdrant.example.com:6333"}
    stability: {repeats: 3}
""",
    "slices": """\
slices:
  tags: true
  frequency: true
  head_fraction: 0.1
  tail_fraction: 0.4
""",
    "slices.custom[]": """\
slices:
  custom:
    - {name: questions, pattern: '\\?$'}
    - {name: billing, tag: billing}
    - {name: escalated, query_ids: [q-001, q-017, q-112]}
""",
    "bootstrap": """\
bootstrap: {samples: 2000, seed: 7, confidence: 0.9}
""",
    "health": """\
health: {enabled: true, sample: 1000}
""",
    "gate": """\
gate:
  baseline: baselines/main.json
  slices: [all, exact-match]
  indexes: [exact, hnsw]
  ann_min_recall: 0.95
  labels: human
""",
    "gate.thresholds.<name>": """\
gate:
  thresholds:
    ndcg@10: {max_drop: 0.02}
    recall@100: {min: 0.85, max_drop_pct: 2}
""",
    "gate.overrides[]": """\
gate:
  overrides:
    - {slice: head, metric: ndcg@10, max_drop: 0.05}
    - {index: hnsw, metric: recall@10, min: 0.6}
""",
    "gate.budgets.<name>": """\
gate:
  budgets:
    hnsw: {max_index_bytes: 1000000, max_p95_ms: 5}
""",
    "gate.significance": """\
gate:
  significance: {test: t-test, alpha: 0.05, correction: holm}
""",
    "gate.unjudged": """\
gate:
  unjudged: {policy: fail, min_judged: 0.5}
""",
    "gate.health.<name>": """\
gate:
  health:
    effective_rank: {min: 50}
""",
    "gate.coverage": """\
gate:
  coverage: {min: 0.8, similarity: 0.6}
""",
    "cache": """\
cache: {enabled: true, dir: .evalret-cache}
""",
    "embedding": """\
embedding: {engine: ray, address: auto, workers: 4, batch_size: 256, gpus_per_worker: 1}
""",
    "output": """\
output: {dir: reports/ci}
""",
    "leakage": """\
leakage: {threshold: 0.9, max_fraction: 0.01}
""",
    "history": """\
history: {path: evalret-history.sqlite}
""",
    "beyond_accuracy": """\
beyond_accuracy: {k: 10}
""",
    "sample": """\
sample: {queries: 100, documents: 2000, seed: 0, min_per_slice: 5}
""",
    "judge": """\
judge:
  name: gpt-4o-mini
  base_url: https://api.openai.com/v1
  api_key_env: OPENAI_API_KEY
  prompt: umbrela
  price_per_million_input_tokens: 0.15
  price_per_million_output_tokens: 0.60
""",
    "synth": """\
synth:
  chat: {name: gpt-4o-mini, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}
  styles: {keyword: 0.5, question: 0.5}
  clusters: 8
  allocation: equal
  too_easy: drop
""",
    "synth.chat": """\
synth:
  chat:
    name: llama3.1:8b
    base_url: http://localhost:11434/v1
    temperature: 0.7
    concurrency: 2
""",
}
