#!/bin/sh
# Runs graspd's test suite: unit tests, integration tests (real processes
# on loopback) and the Node.js interop test.  Every test program prints
# "ok - NAME" / "not ok - NAME" lines; this script adds them up and ends
# with the line "N passed, N failed".  Usage: tests/run.sh [unit|integration|interop|fuzz]...
set -u

O=${O:-build}
BIN=${BIN:-bin}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
GRASPD_BIN=$(cd "$BIN" 2>/dev/null && pwd) || GRASPD_BIN="$top/$BIN"
export GRASPD_BIN
: "${GRASPD_VECTORS:=$top/../shared/vectors}"
export GRASPD_VECTORS

groups=${*:-unit integration interop fuzz}
pass=0
fail=0
failed_names=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# run_prog NAME TIMEOUT CMD...: runs one test program and counts its cases.
run_prog() {
	name=$1
	limit=$2
	shift 2
	echo "# --- $name"
	t0=$(date +%s)
	timeout -k 10 "$limit" "$@" >"$log" 2>&1
	rc=$?
	cat "$log"
	echo "# $name took $(($(date +%s) - t0)) s"
	p=$(grep -cE '^ok ([0-9]+ )?- ' "$log")
	f=$(grep -cE '^not ok ([0-9]+ )?- ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name: exited with status $rc"
		f=1
	fi
	pass=$((pass + p))
	fail=$((fail + f))
	[ "$f" -gt 0 ] && failed_names="$failed_names $name"
}

for g in $groups; do
	case $g in
	unit|integration)
		for t in "$O"/tests/"$g"/*_test; do
			[ -x "$t" ] || continue
			run_prog "$(basename "$t")" 600 "$t"
		done
		;;
	interop)
		if [ -f tests/interop/run.sh ]; then
			run_prog interop 600 sh tests/interop/run.sh
		fi
		;;
	fuzz)
		if [ -f tests/fuzz/run_short.sh ]; then
			run_prog fuzz 600 sh tests/fuzz/run_short.sh
		fi
		;;
	*)
		echo "unknown test group $g" >&2
		exit 2
		;;
	esac
done

[ -n "$failed_names" ] && echo "# failed:$failed_names"
# scripts/test.sh runs the suite twice and prints the grand total itself.
if [ -n "${RUN_LABEL:-}" ]; then
	echo "# $RUN_LABEL: $pass passed, $fail failed"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
