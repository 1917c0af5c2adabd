#!/bin/bash
# Run the standalone reproductions on one Python (one Ray release) and append one JSON line per
# script to $OUT (default ./repro-runs.jsonl): {"id", "ray", "rc", "seconds", "line", "python"}.
# Record them with: python scripts/gen_known_bugs.py --record-repro repro-runs.jsonl
#
#   scenarios/known/repro/run.sh PYTHON [ID ...]        # every entry when no ID is given
#
# Each script starts its own local Ray cluster: run one at a time on a host (this project wraps the
# call in `flock /tmp/ftharness-ray.lock`), and never beside another Ray cluster.
set -u
PY=${1:?usage: run.sh PYTHON [ID ...]}; shift
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/repro-runs.jsonl}
IDS=("$@")
[ ${#IDS[@]} -eq 0 ] && IDS=($(cd "$HERE" && ls *.py | sed 's/\.py$//'))
RAY=$(cd /tmp && "$PY" -P -c 'import ray; print(ray.__version__)')
for id in "${IDS[@]}"; do
  log=$(mktemp)
  t0=$(date +%s.%N)
  (cd /tmp && timeout 480 "$PY" -P "$HERE/$id.py" >"$log" 2>&1); rc=$?
  t1=$(date +%s.%N)
  line=$(grep -o "$id: Ray .*" "$log" | tail -1)
  echo "$line"
  "$PY" -P -c 'import json, sys; print(json.dumps({"id": sys.argv[1], "ray": sys.argv[2], "rc": int(sys.argv[3]),
    "seconds": round(float(sys.argv[5]) - float(sys.argv[4]), 1), "line": sys.argv[6], "python": sys.argv[7]}))' \
    "$id" "$RAY" "$rc" "$t0" "$t1" "$line" "$PY" >>"$OUT"
  rm -f "$log"
done
