#!/usr/bin/env bash
# The whole test suite, lane by lane (README.md's test command; .ci/run calls it after the lint):
#   1. the fast lane: every test that loads no model, browser, database or Ray;
#   2. the heavy lanes: the tests marked model, browser, postgres or ray.
# Each lane is one pytest session in pytest-xdist workers (EVALRET_TEST_WORKERS, default 2) with
# --dist loadgroup, so that the tests reading SciFact run on one worker (tests/conftest.py groups
# them) and embed it once into the session's embedding cache, which every worker shares. A lane
# run alone keeps tests/conftest.py's lane check: a fast-lane test that loads a heavy library fails.
# Each lane lists its 20 slowest steps. Exits non-zero at the first lane that fails; arguments are
# passed on to both pytest sessions.
set -euo pipefail
cd "$(dirname "$0")/.."
# two workers share the cores: OpenMP's threads (torch's, faiss's) sleep when they wait instead of
# spinning on a core the other worker needs (about 20% less wall time for two concurrent model
# runs on 2 cores: benchmarks/RESULTS-ci.md); the thread counts, and so every figure, stay the same
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
xdist=(-n "${EVALRET_TEST_WORKERS:-2}" --dist loadgroup --durations=20)
heavy="model or browser or postgres or ray"
# The heavy lanes' SciFact tests embed SciFact with the packaged model (minutes): with the whole
# suite to run, that embedding starts now, beside the fast lane, into the fresh embedding cache the
# heavy lanes' session then uses (EVALRET_TEST_CACHE_DIR, tests/conftest.py). Should it fail, the
# tests embed SciFact themselves.
warm_pid=""
if [ $# -eq 0 ] && [ -f ../shared/data/scifact/corpus.jsonl ]; then
  heavy_cache=$(mktemp -d "${TMPDIR:-/tmp}/evalret-test-cache-heavy.XXXXXX")
  EVALRET_CACHE_DIR=$heavy_cache .venv/bin/evalret embed -c configs/scifact.yaml --no-progress \
    >"$heavy_cache.log" 2>&1 &
  warm_pid=$!
fi
echo "== fast lane (not $heavy): $(date -u +%T)"
.venv/bin/python -m pytest "${xdist[@]}" -m "not ($heavy)" "$@"
if [ -n "$warm_pid" ]; then
  wait "$warm_pid" || { echo "scripts/test.sh: SciFact not embedded ahead:"; cat "$heavy_cache.log"; }
  export EVALRET_TEST_CACHE_DIR=$heavy_cache
fi
echo "== heavy lanes ($heavy): $(date -u +%T)"
.venv/bin/python -m pytest "${xdist[@]}" -m "$heavy" "$@"
