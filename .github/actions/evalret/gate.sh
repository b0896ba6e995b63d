#!/usr/bin/env bash
# Run the gate (`evalret run`) under a fresh run id, and pass its exit code on as the verdict
# only when the run's report.json carries that id and the same verdict: 0 needs a report that
# passed, has no gate or is inconclusive (gate.unjudged.policy warn), 1 one that failed. An exit
# 0 or 1 with a report missing, left by an earlier run, or saying otherwise becomes 3 (evalret
# did not finish as it said): never a pass.
#
# Environment: EVALRET_CONFIG, EVALRET_BASELINE (may be empty), EVALRET_OUT, GITHUB_OUTPUT.
# Writes exit-code and run-id to $GITHUB_OUTPUT.
set -uo pipefail

run_id=$(python -c 'import uuid; print(uuid.uuid4())') || {
  echo "::error::evalret: cannot make a run id (python -c 'import uuid')"
  echo "exit-code=3" >>"$GITHUB_OUTPUT"
  exit 0
}
export EVALRET_RUN_ID=$run_id
echo "run-id=$run_id" >>"$GITHUB_OUTPUT"

args=(run --config "$EVALRET_CONFIG" --out "$EVALRET_OUT" --no-progress)
if [ -n "${EVALRET_BASELINE:-}" ]; then args+=(--baseline "$EVALRET_BASELINE"); fi
evalret "${args[@]}"
code=$?

if [ "$code" = 0 ] || [ "$code" = 1 ]; then
  # what this run's report says: pass, fail, inconclusive, none (no gate), or why it is not
  # this run's
  verdict=$(python - "$EVALRET_OUT/report.json" "$run_id" <<'PY'
import json
import sys

path, run_id = sys.argv[1], sys.argv[2]
try:
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
except (OSError, ValueError) as e:
    print(f"no readable report ({e.__class__.__name__}: {e})")
    sys.exit(0)
if not isinstance(report, dict) or report.get("run_id") != run_id:
    found = report.get("run_id") if isinstance(report, dict) else None
    print(f"the report is not this run's (run id {found!r}, expected {run_id})")
    sys.exit(0)
gate = report.get("gate")
print("none" if gate is None else gate.get("verdict") if isinstance(gate, dict) else "?")
PY
  )
  case "$code:$verdict" in
    0:pass | 0:inconclusive | 0:none | 1:fail) ;;
    *)
      echo "::error::evalret exited $code but $EVALRET_OUT/report.json does not agree: $verdict"
      code=3
      ;;
  esac
fi
echo "exit-code=$code" >>"$GITHUB_OUTPUT"
