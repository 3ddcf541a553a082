#!/bin/sh
# Short runs of graspd's libFuzzer harnesses, for "make test" (tests/run.sh
# group "fuzz").  Builds them ("make fuzz-build"), then runs each for
# FUZZ_SHORT_SECONDS (default 3) on a copy of its seed corpus, so the
# checked-in tests/fuzz/corpus/ is never written, and prints "ok -
# fuzz_<name>" or "not ok - fuzz_<name>" for each.  A crash input is kept
# in $FUZZ_O/short-artifacts/<name>/.  Without clang and libFuzzer every
# harness is reported as skipped.  Long runs are "make fuzz".
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
FUZZ_O=${FUZZ_O:-build/fuzz}
FUZZ_CC=${FUZZ_CC:-clang}
secs=${FUZZ_SHORT_SECONDS:-3}
names=$(for f in tests/fuzz/*_fuzz.c; do
	b=${f##*/}
	echo "${b%_fuzz.c}"
done)

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

skip_all() {
	for n in $names; do
		echo "ok - fuzz_$n # skip $1"
	done
	exit 0
}

# libFuzzer ships with clang; check that it links with the sanitizers.
command -v "$FUZZ_CC" >/dev/null 2>&1 || skip_all "$FUZZ_CC not found"
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)'\
'{ (void)d; (void)n; return 0; }\n' >"$tmp/probe.c"
"$FUZZ_CC" -fsanitize=fuzzer,address,undefined -o "$tmp/probe" \
    "$tmp/probe.c" >/dev/null 2>&1 ||
	skip_all "$FUZZ_CC cannot link -fsanitize=fuzzer,address,undefined"

if ! ${MAKE:-make} -s FUZZ_O="$FUZZ_O" FUZZ_CC="$FUZZ_CC" fuzz-build \
    >"$tmp/build.log" 2>&1; then
	sed 's/^/# /' "$tmp/build.log" | tail -40
	for n in $names; do
		echo "not ok - fuzz_$n: make fuzz-build failed"
	done
	exit 1
fi

rc=0
for n in $names; do
	bin=$FUZZ_O/${n}_fuzz
	work=$tmp/$n
	mkdir -p "$work/corpus" "$work/artifacts"
	dict=
	[ -f "tests/fuzz/$n.dict" ] && dict=-dict=tests/fuzz/$n.dict
	# The seeds run first; new inputs go only to the temporary corpus.
	timeout -k 5 $((secs + 30)) "$bin" -max_total_time="$secs" \
	    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix="$work/artifacts/" $dict \
	    "$work/corpus" "tests/fuzz/corpus/$n" >"$work/log" 2>&1
	st=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
	if [ "$st" -eq 0 ]; then
		echo "ok - fuzz_$n"
		echo "# fuzz_$n: ${runs:-?} runs in ${secs} s"
		continue
	fi
	rc=1
	keep=$FUZZ_O/short-artifacts/$n
	mkdir -p "$keep"
	cp "$work"/artifacts/* "$keep"/ 2>/dev/null
	echo "not ok - fuzz_$n: exit status $st; inputs kept in $keep"
	grep -E 'ERROR|SUMMARY|invariant|runtime error|^    #[0-9]' \
	    "$work/log" | head -25 | sed 's/^/# /'
done
exit $rc
