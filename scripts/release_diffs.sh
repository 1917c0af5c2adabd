#!/usr/bin/env bash
# Reproduces the release-diff listing of docs/known-bugs/release-diffs.md: downloads the Ray wheels
# of every release 2.51.0..2.60.0 (`pip download ray==X --no-deps`), extracts ray/train/v2/** and the
# few Ray Data / Ray Core files Train calls on failure, and diffs consecutive releases.
#
#   ./scripts/release_diffs.sh                   # summary table on stdout; temp folder removed at exit
#   OUT=/tmp/raydiffs ./scripts/release_diffs.sh # also keep the extracted trees and one .diff per pair
#   WHEELS=/tmp/raywheels ./scripts/release_diffs.sh   # reuse (and fill) a wheel cache: WHEELS/X/*.whl
#   VERSIONS="2.57.1 2.58.0" ./scripts/release_diffs.sh # only these releases, in this order
#
# Bounded: every download has a timeout (DL_TIMEOUT, default 300 s) and at most 3 tries; a wheel that
# cannot be had is reported and its pairs skipped. Re-runnable: wheels already in WHEELS are not
# downloaded again, OUT is rewritten. Needs pip, unzip (or python3), diff. About 18 wheels of ~70 MB.
set -euo pipefail

VERSIONS="${VERSIONS:-2.51.0 2.51.1 2.51.2 2.52.0 2.52.1 2.53.0 2.54.0 2.54.1 2.55.0 2.55.1 2.56.0 2.56.1 2.57.0 2.57.1 2.58.0 2.58.1 2.59.0 2.60.0}"
PYTAG="${PYTAG:-3.11}"
DL_TIMEOUT="${DL_TIMEOUT:-300}"
PIP="${PIP:-$(command -v pip3 || command -v pip)}"

# the Data / Core files Train reaches on failure (worker-group shutdown, elastic sizing, drains)
EXTRA_PATHS=(
  'ray/train/_internal/data_config.py'
  'ray/train/_internal/checkpoint_manager.py'
  'ray/data/_internal/cluster_autoscaler/*'
  'ray/data/_internal/iterator/stream_split_iterator.py'
  'ray/data/_internal/execution/streaming_executor.py'
  'ray/data/_internal/execution/streaming_executor_state.py'
  'ray/data/_internal/execution/resource_manager.py'
  'ray/exceptions.py'
  'ray/_private/state.py'
  'ray/util/placement_group.py'
)

TMP="$(mktemp -d /tmp/release-diffs.XXXXXX)"
cleanup() { rm -rf "$TMP"; }
trap cleanup EXIT INT TERM
WHEELS="${WHEELS:-$TMP/wheels}"
SRC="${OUT:+$OUT/src}"; SRC="${SRC:-$TMP/src}"
DIFFS="${OUT:+$OUT/diffs}"; DIFFS="${DIFFS:-$TMP/diffs}"
[ -n "${OUT:-}" ] && rm -rf "$OUT/src" "$OUT/diffs"
mkdir -p "$WHEELS" "$SRC" "$DIFFS"

wheel_of() { ls "$WHEELS/$1"/ray-"$1"-*.whl 2>/dev/null | head -1; }

fetch() {  # fetch VERSION: the wheel into $WHEELS/VERSION, at most 3 tries
  local v="$1" try
  [ -n "$(wheel_of "$v")" ] && return 0
  for try in 1 2 3; do
    if timeout "$DL_TIMEOUT" "$PIP" download -q "ray==$v" --no-deps --only-binary=:all: \
         --python-version "$PYTAG" --platform manylinux2014_x86_64 -d "$WHEELS/$v" \
         >"$TMP/pip-$v.log" 2>&1; then
      [ -n "$(wheel_of "$v")" ] && return 0
    fi
    sleep $((try * 5))
  done
  echo "release_diffs: ray==$v: no wheel (see the pip log below)" >&2
  tail -3 "$TMP/pip-$v.log" >&2
  return 1
}

extract() {  # extract VERSION: ray/train/v2/** and EXTRA_PATHS into $SRC/VERSION (tests left out)
  local v="$1" w; w="$(wheel_of "$v")"
  rm -rf "${SRC:?}/$v"; mkdir -p "$SRC/$v"
  if command -v unzip >/dev/null; then
    unzip -q -o "$w" 'ray/train/v2/*' "${EXTRA_PATHS[@]}" -d "$SRC/$v" || true
  else
    python3 - "$w" "$SRC/$v" "${EXTRA_PATHS[@]}" <<'EOF'
import fnmatch, sys, zipfile
w, dest, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(w) as z:
    for n in z.namelist():
        if (n.startswith("ray/train/v2/") and not n.startswith("ray/train/v2/tests/")) or any(fnmatch.fnmatch(n, p) for p in extra):
            z.extract(n, dest)
EOF
  fi
  find "$SRC/$v" -name '__pycache__' -prune -exec rm -rf {} +
}

have=()
for v in $VERSIONS; do
  if fetch "$v"; then extract "$v"; have+=("$v"); fi
done

count() {  # count A B SUBDIR: files changed, +lines, -lines (diff -ru of SUBDIR)
  local a="$1" b="$2" sub="$3"
  local d; d="$(diff -ru "$SRC/$a/$sub" "$SRC/$b/$sub" 2>/dev/null || true)"
  local files plus minus
  files="$(printf '%s\n' "$d" | grep -cE '^(diff -ru|Only in) ' || true)"
  plus="$(printf '%s\n' "$d" | grep -E '^\+' | grep -vcE '^\+\+\+ ' || true)"
  minus="$(printf '%s\n' "$d" | grep -E '^-' | grep -vcE '^--- ' || true)"
  echo "$files $plus $minus"
}

printf '%-17s %-5s %-13s %-13s  %s\n' "pair" "kind" "train/v2" "data+core" "(files changed, +lines/-lines; tests excluded)"
prev=""; prev_minor=""
for v in "${have[@]}"; do
  minor="${v%.*}"
  if [ -n "$prev" ]; then
    kind="minor"; [ "$minor" = "$prev_minor" ] && kind="patch"
    read -r f p m < <(count "$prev" "$v" ray/train/v2)
    ef=0; ep=0; em=0
    for sub in ray/data ray/exceptions.py ray/_private ray/util ray/train/_internal; do
      [ -e "$SRC/$prev/$sub" ] || [ -e "$SRC/$v/$sub" ] || continue
      if [ -d "$SRC/$prev/$sub" ] || [ -d "$SRC/$v/$sub" ]; then
        read -r a b c < <(count "$prev" "$v" "$sub")
      else
        d="$(diff -u "$SRC/$prev/$sub" "$SRC/$v/$sub" 2>/dev/null || true)"
        a=0; [ -n "$d" ] && a=1
        b="$(printf '%s\n' "$d" | grep -E '^\+' | grep -vcE '^\+\+\+ ' || true)"
        c="$(printf '%s\n' "$d" | grep -E '^-' | grep -vcE '^--- ' || true)"
      fi
      ef=$((ef + a)); ep=$((ep + b)); em=$((em + c))
    done
    printf '%-17s %-5s %-13s %-13s\n' "$prev->$v" "$kind" "$f +$p/-$m" "$ef +$ep/-$em"
    (cd "$SRC" && diff -ru "$prev" "$v" >"$DIFFS/$prev-$v.diff" || true)
  fi
  prev="$v"; prev_minor="$minor"
done
[ -n "${OUT:-}" ] && echo "release_diffs: trees in $OUT/src, one diff per pair in $OUT/diffs"
exit 0
