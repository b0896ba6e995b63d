#!/usr/bin/env bash
# Set up evalret in ./.venv on a fresh machine (Python 3.10+, pip, gcc).
#   bash scripts/setup.sh          # evalret and its runtime dependencies
#   bash scripts/setup.sh --test   # ... plus the test dependencies (pytest, hypothesis, trec_eval,
#                                  # playwright, mkdocs-material) and Debian's chromium (apt-get, as root)
# torch is installed first as the CPU build 2.13.0, so that sentence-transformers does not pull a
# multi-GB GPU build. On a machine without a local torch wheel, set EVALRET_TORCH_INDEX to a CPU
# wheel index (e.g. PyTorch's /whl/cpu index) to get a CPU build from there.
set -euo pipefail
cd "$(dirname "$0")/.."

extra=""
case "${1:-}" in
  --test) extra="[test]" ;;
  --dev) extra="[dev]" ;;
  "") ;;
  *) echo "usage: $0 [--test|--dev]" >&2; exit 2 ;;
esac

# tests/test_infinity.py serves the packaged model with infinity-emb, a real third-party
# OpenAI-compatible server, from a virtualenv of its own (its pins clash with evalret's:
# numpy<2, typer<0.13); torch is the same CPU build, installed first and held by a constraint.
# It is installed in the background, beside evalret's own environment, and waited for at the end
# (its failure fails the setup)
infinity_env() {
  python3 -m venv .venv-infinity
  echo "torch==2.13.0" > .venv-infinity/constraints.txt
  ipip=(.venv-infinity/bin/python -m pip --quiet --disable-pip-version-check)
  if [ -n "${EVALRET_TORCH_INDEX:-}" ]; then
    "${ipip[@]}" install "torch==2.13.0" --index-url "$EVALRET_TORCH_INDEX"
  else
    "${ipip[@]}" install "torch==2.13.0"
  fi
  "${ipip[@]}" install -c .venv-infinity/constraints.txt "infinity-emb[server,torch]==0.0.78"
}
infinity_pid=""
if [ -n "$extra" ] && ! [ -x .venv-infinity/bin/infinity_emb ]; then
  infinity_env &
  infinity_pid=$!
fi

python3 -m venv .venv
pip=(.venv/bin/python -m pip --quiet --disable-pip-version-check)
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  if [ -n "${EVALRET_TORCH_INDEX:-}" ]; then
    "${pip[@]}" install "torch==2.13.0" --index-url "$EVALRET_TORCH_INDEX"
  else
    "${pip[@]}" install "torch==2.13.0"
  fi
fi
"${pip[@]}" install -e ".${extra}"
# the tests open report.html in Debian's Chromium (headless, driven by Playwright; no browser is
# downloaded): install it when missing
if [ -n "$extra" ] && ! [ -x "${EVALRET_CHROMIUM:-/usr/bin/chromium}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  elif [ "$extra" = "[test]" ]; then
    echo "setup.sh: the tests need Chromium: run as root, or install Debian's chromium package" >&2
    exit 1
  else
    echo "setup.sh: warning: Chromium missing; the browser test of report.html will fail" >&2
  fi
fi
if [ -n "$infinity_pid" ]; then wait "$infinity_pid"; fi
.venv/bin/evalret --version
