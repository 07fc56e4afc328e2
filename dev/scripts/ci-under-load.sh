#!/usr/bin/env bash
# Runs CI (`bash .ci/run`) on a clean clone of the current HEAD while the machine is kept busy, and prints
# the wall time of each run. What it proves: the suite holds on a loaded machine (tests wait for events,
# not for time).
#
# The load: two concurrent `stress-ng --cpu 2` (four CPU hogs), as in issue 25. Without stress-ng (and
# without apt-get to install it), the same number of pure-Node busy loops stands in. The load is always
# stopped on exit (normal end, failure, Ctrl-C), and the temporary clone is removed.
#
# Usage: bash dev/scripts/ci-under-load.sh [--runs N] [--keep] [--no-install] [--dry-run]
#   --runs N        run CI N times in a row on the same clone (default 1; the target is 2 green in a row)
#   --keep          keep the temporary clone (its path is printed)
#   --no-install    never apt-get install stress-ng; use the Node busy loops when it is missing
#   --dry-run       print what would be done, start nothing
# Environment: AIP_LOAD_WORKERS (default 2) stress-ng processes, AIP_LOAD_CPUS (default 2) CPU hogs each.
set -euo pipefail

RUNS=1
KEEP=0
INSTALL=1
DRY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="${2:?--runs needs a number}"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --no-install) INSTALL=0; shift ;;
    --dry-run) DRY=1; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$RUNS" in ''|*[!0-9]*) echo "--runs needs a positive number, got: $RUNS" >&2; exit 2 ;; esac
[ "$RUNS" -ge 1 ] || { echo "--runs needs a positive number, got: $RUNS" >&2; exit 2; }

WORKERS="${AIP_LOAD_WORKERS:-2}"
CPUS="${AIP_LOAD_CPUS:-2}"
REPO="$(git -C "$(dirname "$0")/../.." rev-parse --show-toplevel)"
HEAD="$(git -C "$REPO" rev-parse HEAD)"

say() { echo "[ci-under-load] $*" >&2; }
run() {
  if [ "$DRY" = 1 ]; then echo "would run: $*"; else "$@"; fi
}

# --- the load ----------------------------------------------------------------------------------------
LOAD_PIDS=()
have_stress() { command -v stress-ng >/dev/null 2>&1; }

ensure_stress() {
  have_stress && return 0
  if [ "$INSTALL" = 1 ] && command -v apt-get >/dev/null 2>&1; then
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    say "stress-ng not found: installing it with apt-get"
    if [ "$DRY" = 1 ]; then
      echo "would run: ${sudo:+$sudo }apt-get update && ${sudo:+$sudo }apt-get install -y stress-ng"
      return 0
    fi
    { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -y && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends stress-ng; } >/dev/null || true
  fi
  have_stress
}

start_load() {
  if ensure_stress; then
    say "load: $WORKERS × stress-ng --cpu $CPUS"
    for _ in $(seq "$WORKERS"); do
      if [ "$DRY" = 1 ]; then echo "would run in the background: stress-ng --cpu $CPUS --quiet"; continue; fi
      stress-ng --cpu "$CPUS" --quiet &
      LOAD_PIDS+=("$!")
    done
  else
    local hogs=$((WORKERS * CPUS))
    say "load: stress-ng unavailable; $hogs Node busy loops instead"
    for _ in $(seq "$hogs"); do
      if [ "$DRY" = 1 ]; then echo "would run in the background: node -e 'for(;;){}'"; continue; fi
      node -e 'for (;;) {}' &
      LOAD_PIDS+=("$!")
    done
  fi
}

stop_load() {
  local pid
  for pid in "${LOAD_PIDS[@]+"${LOAD_PIDS[@]}"}"; do
    # stress-ng forwards the signal to its own workers.
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${LOAD_PIDS[@]+"${LOAD_PIDS[@]}"}"; do
    wait "$pid" 2>/dev/null || true
  done
  LOAD_PIDS=()
}

# --- the clean clone ---------------------------------------------------------------------------------
WORK=""
cleanup() {
  local rc=$?
  stop_load
  if [ -n "$WORK" ] && [ -d "$WORK" ]; then
    if [ "$KEEP" = 1 ]; then say "clone kept at $WORK/repo"; else rm -rf "$WORK"; fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$DRY" = 1 ]; then
  WORK="(a new temporary directory)"
  echo "would run: git clone --quiet --no-hardlinks $REPO $WORK/repo && git -C $WORK/repo checkout --quiet --detach $HEAD"
else
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/aip-ci-under-load.XXXXXX")"
  git clone --quiet --no-hardlinks "$REPO" "$WORK/repo"
  git -C "$WORK/repo" checkout --quiet --detach "$HEAD"
fi
say "clean clone of $HEAD in $WORK/repo"

start_load
say "load average before CI: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"

declare -a TIMES=()
declare -a RESULTS=()
FAILED=0
for i in $(seq "$RUNS"); do
  say "run $i of $RUNS: bash .ci/run"
  start=$(date +%s)
  if [ "$DRY" = 1 ]; then
    echo "would run: (cd $WORK/repo && bash .ci/run)"
    rc=0
  else
    set +e
    (cd "$WORK/repo" && bash .ci/run)
    rc=$?
    set -e
  fi
  end=$(date +%s)
  TIMES+=("$((end - start))")
  if [ "$DRY" = 1 ]; then RESULTS+=("not run (dry run)"); else RESULTS+=("$([ "$rc" = 0 ] && echo passed || echo "FAILED (exit $rc)")"); fi
  [ "$rc" = 0 ] || FAILED=1
  say "load average after run $i: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
done

stop_load
echo
echo "CI under load ($WORKERS × stress-ng --cpu $CPUS or equivalent) at $HEAD on $(nproc 2>/dev/null || echo '?') cores:"
for i in $(seq "$RUNS"); do
  t=${TIMES[$((i - 1))]}
  printf '  run %d: %s, wall time %dm%02ds\n' "$i" "${RESULTS[$((i - 1))]}" "$((t / 60))" "$((t % 60))"
done
exit "$FAILED"
