#!/bin/sh
# make soak: the long runs of issue #11, on loopback, about ten minutes.
#  - crash: every role killed with SIGKILL 20 times at seeded random
#    moments under publish load (tests/integration/crash_test with
#    GRASPD_CRASH_KILLS=20): nothing acknowledged lost, no other pid
#    changed, restart times (min/median/p95/max, how many over 2 s); then
#    five power cuts of the whole process group (SOAK_CUTS).
#  - power cut: relayd on a recording VFS cut at 100 seeded moments of
#    a publish load (tests/integration/powercut_test with
#    GRASPD_POWERCUT_CUTS=100), each rebuilt as a power cut leaves the
#    files: integrity_check ok and every acknowledged event there; then
#    10 such cuts with durability normal, the events they lose as figures.
#  - load: 2,000 websocket clients x 10 subscriptions, publishing and
#    subscribing for 60 s (tests/integration/load_test with
#    GRASPD_LOAD_*): OK latency p99, relayd's memory, dropped
#    subscriptions (must be 0); then the connection limit's HTTP 503.
#  - bigpush: pushes of 99, 101, 150 and 300 MiB into empty repositories,
#    chunked and with a Content-Length (tests/integration/bigpush_test
#    with GRASPD_BIGPUSH_MIB; make test runs 99 and 101 only).
# The figures are printed at the end.  SOAK_KILLS, SOAK_POWERCUTS,
# SOAK_NORMAL_CUTS, SOAK_CLIENTS, SOAK_SUBS, SOAK_SECS and SOAK_RATE
# change the sizes; GRASPD_CRASH_SEED replays a kill schedule,
# GRASPD_POWERCUT_SEED the power cuts.  Exit status 0 only if every case passed.
set -u

O=${O:-build}
BIN=${BIN:-bin}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
GRASPD_BIN=$(cd "$BIN" && pwd) || exit 1
export GRASPD_BIN

log=$(mktemp -d) || exit 1
trap 'rm -rf "$log"' EXIT
rc=0

# run NAME PROGRAM: runs one test program with a generous bound.
run() {
	echo "# === $1"
	timeout -k 10 1800 "$2" >"$log/$1" 2>"$log/$1.err"
	st=$?
	grep -E '^(ok|not ok) - |^# ' "$log/$1"
	if [ "$st" -ne 0 ] || grep -q '^not ok' "$log/$1"; then
		rc=1
		tail -n 30 "$log/$1.err" | sed 's/^/# stderr: /'
	fi
}

GRASPD_CRASH_KILLS=${SOAK_KILLS:-20} GRASPD_CRASH_CUTS=${SOAK_CUTS:-5} \
    run crash "$O/tests/integration/crash_test"

GRASPD_POWERCUT_CUTS=${SOAK_POWERCUTS:-100} \
    GRASPD_POWERCUT_NORMAL_CUTS=${SOAK_NORMAL_CUTS:-10} \
    run powercut "$O/tests/integration/powercut_test"

# Both ends of 2,000 connections, with room to spare.
ulimit -n "$(ulimit -H -n)" 2>/dev/null
GRASPD_LOAD_CLIENTS=${SOAK_CLIENTS:-2000} GRASPD_LOAD_SUBS=${SOAK_SUBS:-10} \
    GRASPD_LOAD_SECS=${SOAK_SECS:-60} GRASPD_LOAD_RATE=${SOAK_RATE:-50} \
    run load "$O/tests/integration/load_test"

GRASPD_BIGPUSH_MIB=${SOAK_BIGPUSH_MIB:-99,101,150,300} \
    run bigpush "$O/tests/integration/bigpush_test"

echo "# === figures"
grep -hE '^# (seed|kill -9 any role|kill -9 [a-z]+:|[0-9]+ publish attempts|after restart)' \
    "$log/crash"
grep -hE '^# (seed|durability (full|normal):)' "$log/powercut"
grep -hE '^# ([0-9]+ clients|published|OK latency|relayd RSS|dropped)' \
    "$log/load"
if [ "$rc" -eq 0 ]; then
	echo "soak: all passed"
else
	echo "soak: FAILED"
fi
exit $rc
