#!/bin/sh
# Installs what is missing (Debian packages, and the npm packages of the
# interop test), builds everything and runs the whole test suite twice:
# once as built for production, once under AddressSanitizer and
# UndefinedBehaviorSanitizer.  The last line of output is the total,
# "N passed, N failed".  With WERROR=1 (as .ci/run sets it) a compiler
# warning fails the build.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
sh scripts/deps.sh --test || exit 1

SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
log=$(mktemp)
notok=$(mktemp)
trap 'rm -f "$log" "$notok"' EXIT
total_pass=0
total_fail=0

# suite LABEL GROUPS O BIN [make variables...]: builds into O/BIN and
# runs the test groups (see tests/run.sh).
suite() {
	label=$1
	groups=$2
	o=$3
	bin=$4
	shift 4
	echo "# === $label suite"
	if ! make -j2 O="$o" BIN="$bin" "$@" all tests; then
		echo "not ok - build_$label: make failed" | tee -a "$notok"
		total_fail=$((total_fail + 1))
		return
	fi
	# shellcheck disable=SC2086
	RUN_LABEL=$label O=$o BIN=$bin sh tests/run.sh $groups | tee "$log"
	# What failed is printed again at the end, where a log's tail shows it.
	grep -E '^(not ok|# failed:)' "$log" | sed "s/^/# $label: /" >>"$notok"
	line=$(grep "^# $label: " "$log" | tail -n 1)
	p=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed/\1/p')
	f=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed/\2/p')
	if [ -z "$p" ]; then
		echo "not ok - suite_$label: no summary" | tee -a "$notok"
		p=0
		f=1
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
}

WFLAGS=
[ "${WERROR:-0}" = 1 ] && WFLAGS=-Werror
suite normal "" build bin CFLAGS="-O2 -g $WFLAGS"
# The fuzz group already runs the parsers under the sanitizers.
ASAN_OPTIONS=detect_leaks=1
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS UBSAN_OPTIONS
suite sanitize "unit integration interop" build/san build/san/bin \
    CFLAGS="-O1 -g $SAN $WFLAGS" LDFLAGS="$SAN"

cat "$notok"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ] && [ "$total_pass" -gt 0 ]
