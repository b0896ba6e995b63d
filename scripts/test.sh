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
echo "== fast lane (not $heavy): $(date -u +%T)"
.venv/bin/python -m pytest "${xdist[@]}" -m "not ($heavy)" "$@"
echo "== heavy lanes ($heavy): $(date -u +%T)"
.venv/bin/python -m pytest "${xdist[@]}" -m "$heavy" "$@"
