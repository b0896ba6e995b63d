#!/usr/bin/env bash
# The package as people install it (called by .ci/run after the tests, with the --dev venv):
#   1. build the sdist, and the wheel from the sdist (`python -m build`), into a temporary dir;
#   2. `twine check --strict` both, and check what they hold (scripts/check_dist.py);
#   3. make a fresh venv (not ./.venv), install torch==2.13.0 there as scripts/setup.sh does
#      (the CPU build; EVALRET_TORCH_INDEX names a CPU wheel index), then the wheel, not editable;
#   4. from a directory outside the repository, with a fresh embedding cache: the installed
#      package is the one imported, `evalret --version` prints the wheel's version, `evalret init`
#      writes its templates, and the demo gates against the committed baseline: GATE PASSED, exit 0;
#   5. the first hour, from the wheel alone: `evalret run` in an empty directory (the packaged
#      demo) exits 0; after `evalret init` there, `evalret run` names the missing baseline and the
#      line that saves it, which, pasted, exits 0; then `evalret run` (./evalret.yaml, its
#      gate.baseline) and `evalret run --baseline baselines/evalret.json` pass: GATE PASSED.
# Exits non-zero at the first step that fails. EVALRET_KEEP_PACKAGE_CHECK=1 keeps the temp dir.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
python=${EVALRET_DEV_PYTHON:-.venv/bin/python}
start=$SECONDS
say() { echo "check_package: $* ($((SECONDS - start)) s)"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/evalret-package.XXXXXX")
if [ -z "${EVALRET_KEEP_PACKAGE_CHECK:-}" ]; then
  trap 'rm -rf "$work"' EXIT
else
  echo "check_package: keeping $work"
fi

# 1-2. build and check the archives
"$python" -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || {
  cat "$work/build.log"
  exit 1
}
"$python" -m twine check --strict "$work"/dist/*
"$python" scripts/check_dist.py "$work/dist"
wheel=$(ls "$work"/dist/*.whl)
version=$(basename "$wheel" | cut -d- -f2)
say "built and checked $(basename "$wheel") and its sdist"

# 3. a fresh venv with the wheel (PYTHONPATH unset: nothing of the checkout may be imported)
unset PYTHONPATH
python3 -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip --quiet --disable-pip-version-check)
if [ -n "${EVALRET_TORCH_INDEX:-}" ]; then
  "${pip[@]}" install "torch==2.13.0" --index-url "$EVALRET_TORCH_INDEX"
else
  "${pip[@]}" install "torch==2.13.0"
fi
"${pip[@]}" install "$wheel"
say "installed the wheel in a fresh venv"

# 4. the installed package, run from outside the checkout
demo="$work/demo"
mkdir -p "$demo/configs" "$demo/golden_sets" "$demo/baselines"
cp configs/default.yaml "$demo/configs/"
cp -rL golden_sets/demo "$demo/golden_sets/"  # the link to the packaged copy, followed
cp baselines/demo.json "$demo/baselines/"
cd "$demo"
export EVALRET_CACHE_DIR="$work/cache"
bin="$work/venv/bin"
where=$("$bin/python" -c 'import evalret; print(evalret.__file__)')
case "$where" in
  "$work/venv/"*) ;;
  *) echo "check_package: evalret imported from $where, not the fresh venv" >&2; exit 1 ;;
esac
installed=$("$bin/python" -c 'import importlib.metadata as m; print(m.version("evalret"))')
shown=$("$bin/evalret" --version)
if [ "$shown" != "evalret $version" ] || [ "$installed" != "$version" ]; then
  echo "check_package: wheel $version, metadata $installed, --version '$shown'" >&2
  exit 1
fi
"$bin/evalret" init scaffold >/dev/null
"$bin/evalret" validate scaffold/evalret.yaml >/dev/null
code=0
"$bin/evalret" run --config configs/default.yaml --baseline baselines/demo.json --no-progress \
  >"$work/run.log" 2>&1 || code=$?
if [ "$code" != 0 ] || ! grep -q "GATE PASSED" "$work/run.log"; then
  cat "$work/run.log"
  echo "check_package: the demo from the wheel exited $code, not 0 with GATE PASSED" >&2
  exit 1
fi
grep "GATE PASSED" "$work/run.log"
say "evalret $version from $where: --version, init, and the demo gate passed"

# 5. the first hour: an empty directory, then `evalret init` and a first baseline
# run_ok LOG ARGS...: `evalret ARGS` exits 0 (its output in $work/LOG), else the script fails
run_ok() {
  local log="$work/$1" code=0
  shift
  "$bin/evalret" "$@" --no-progress >"$log" 2>&1 || code=$?
  if [ "$code" != 0 ]; then
    cat "$log"
    echo "check_package: evalret $* in $PWD exited $code, not 0" >&2
    exit 1
  fi
}
empty="$work/empty"
mkdir "$empty"
cd "$empty"
run_ok empty.log run
say "evalret run in an empty directory: the packaged demo, exit 0"
"$bin/evalret" init >/dev/null
code=0
"$bin/evalret" run --no-progress >"$work/missing.log" 2>&1 || code=$?
line=$(grep -E '^ *evalret run ' "$work/missing.log" | sed 's/^ *//') || true
if [ "$code" != 2 ] || [ -z "$line" ]; then
  cat "$work/missing.log"
  echo "check_package: a run without its baseline exited $code, without the line to save it" >&2
  exit 1
fi
echo "check_package: pasting: $line"
eval "run_ok pasted.log ${line#evalret }"
test -f baselines/evalret.json
run_ok gated.log run
run_ok given.log run --baseline baselines/evalret.json
grep -q "GATE PASSED" "$work/gated.log" && grep -q "GATE PASSED" "$work/given.log" || {
  cat "$work/gated.log" "$work/given.log"
  echo "check_package: after evalret init and a saved baseline, no GATE PASSED" >&2
  exit 1
}
say "evalret init, the pasted --save-baseline line, then evalret run (and --baseline): GATE PASSED"
cd "$repo"
