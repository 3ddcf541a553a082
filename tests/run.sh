#!/bin/sh
# Runs graspd's test suite: unit tests, integration tests (real processes
# on loopback), the Node.js interop test, the short fuzz runs and the
# repository's own checks (tests/lint/run.sh).  Every test program prints
# "ok - NAME" / "not ok - NAME" lines; this script adds them up and ends
# with the line "N passed, N failed".
#
# Usage: tests/run.sh [-j N] [unit|integration|interop|fuzz|lint]...
#
# Runs N programs at a time (default: TEST_JOBS, else the number of
# cores), the longest first, so the last to end is a short one.  Each
# program gets a temporary directory of its own as TMPDIR, removed when it
# ends (kept with GRASPD_KEEP_TMP), and a block of loopback ports of its
# own below the kernel's ephemeral range as GRASPD_TEST_PORTS (see
# relayproc_free_port() in tests/lib/relayproc.h), so concurrent programs
# never pick the same port.  A program's output is printed in one piece
# when it ends.
set -u

O=${O:-build}
BIN=${BIN:-bin}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
GRASPD_BIN=$(cd "$BIN" 2>/dev/null && pwd) || GRASPD_BIN="$top/$BIN"
export GRASPD_BIN
: "${GRASPD_VECTORS:=$top/tests/vectors}"
export GRASPD_VECTORS

usage() {
	echo "usage: tests/run.sh [-j N] [unit|integration|interop|fuzz|lint]..." >&2
	exit 2
}

jobs=${TEST_JOBS:-}
while getopts j: opt; do
	case $opt in
	j) jobs=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ -n "$jobs" ] || jobs=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
case $jobs in
'' | *[!0-9]* | 0) usage ;;
esac

# How long each program took in seconds (run one at a time on a 2-core
# machine, 2026-12-03); the longest start first.  A program not listed
# counts as its group's default below.  After a run, $O/tests/run-times
# holds what this build measured, and is used before this table.
times_table='
integration/supervisor_test 40
integration/git_test 37
integration/history_test 50
integration/maint_test 40
integration/sync_recovery_test 33
integration/neg_sync_test 24
integration/crash_test 17
integration/conn_live_test 12
integration/hunt_test 11
integration/budget_test 11
integration/discovery_test 10
integration/dns_test 13
integration/ssrf_test 9
integration/hostile_test 8
integration/web_test 22
integration/webgit_test 20
integration/powercut_test 8
unit/resolve_test 7
integration/load_test 5
integration/roles_test 5
integration/invmem_test 16
fuzz 53
interop 20
lint 15'

# est NAME: the expected seconds of a program (see times_table).
est() {
	t=$(awk -v n="$1" '$1 == n { t = $2 } END { if (t != "") print t }' \
	    "$times" 2>/dev/null)
	[ -n "$t" ] || t=$(echo "$times_table" | awk -v n="$1" \
	    '$1 == n { print $2 }')
	if [ -z "$t" ]; then
		case $1 in
		unit/*) t=1 ;;
		*) t=30 ;;
		esac
	fi
	echo "$t"
}

work=$(mktemp -d "${TMPDIR:-/tmp}/graspd-run.XXXXXX") || exit 1
# Searchable by others, as /tmp is: privdrop_test's roles run as another
# user inside a directory under it (the listing stays private).
chmod 0711 "$work" || exit 1
times=$O/tests/run-times
# stop: ends the programs still running (timeout passes TERM on), for an
# interrupted run.
stop() {
	for f in "$work"/*.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
}
trap 'rm -rf "$work"' EXIT
trap 'stop; exit 130' INT TERM

groups=${*:-unit integration interop fuzz lint}
for g in $groups; do
	case $g in
	unit | integration | interop | fuzz | lint) ;;
	*)
		echo "unknown test group $g" >&2
		exit 2
		;;
	esac
done
# The programs to run, one a line: seconds name limit command...
for g in $groups; do
	case $g in
	unit | integration)
		for t in "$O"/tests/"$g"/*_test; do
			n=$g/${t##*/}
			# A program whose source is gone (renamed) is stale.
			[ -x "$t" ] && [ -f "tests/$n.c" ] || continue
			echo "$(est "$n") $n 600 $t"
		done
		;;
	interop)
		[ -f tests/interop/run.sh ] &&
		    echo "$(est interop) interop 600 sh tests/interop/run.sh"
		;;
	fuzz)
		[ -f tests/fuzz/run_short.sh ] &&
		    echo "$(est fuzz) fuzz 600 sh tests/fuzz/run_short.sh"
		;;
	lint)
		[ -f tests/lint/run.sh ] &&
		    echo "$(est lint) lint 300 sh tests/lint/run.sh"
		;;
	esac
done | sort -k1,1nr -k2,2 >"$work/list" || exit 2
nprogs=$(wc -l <"$work/list")

# Port blocks: the 12,000 ports below the ephemeral range (or above it),
# split evenly between the programs.
read -r eph_lo eph_hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null ||
    { eph_lo=32768; eph_hi=60999; }
if [ "$eph_lo" -ge 13024 ]; then
	span_lo=$((eph_lo - 12000))
elif [ "$eph_hi" -le 53535 ]; then
	span_lo=$((eph_hi + 1))
else
	span_lo=
fi
block=$((12000 / (nprogs + 1)))

# launch I NAME LIMIT CMD...: runs program I in the background, with
# TMPDIR $work/I and the rest in $work/I.*; when it ends, its number is
# written to the fifo.
launch() {
	l_i=$1
	l_d=$work/$l_i
	mkdir -m 0711 "$l_d" || exit 1
	echo "$2" >"$l_d.name"
	l_limit=$3
	shift 3
	l_ports=
	if [ -n "$span_lo" ]; then
		l_lo=$((span_lo + l_i * block))
		l_ports=$l_lo-$((l_lo + block - 1))
	fi
	(
		l_t0=$(date +%s)
		TMPDIR=$l_d GRASPD_TEST_PORTS=$l_ports \
		    timeout -k 10 "$l_limit" "$@" >"$l_d.log" 2>&1 \
		    </dev/null 3>&- &
		echo $! >"$l_d.pid"
		wait $!
		echo $? >"$l_d.rc"
		echo $(($(date +%s) - l_t0)) >"$l_d.secs"
		echo "$l_i" >&3
	) &
}

pass=0
fail=0
failed_names=""
: >"$work/times"
# finish I: prints program I's output and counts its cases.
finish() {
	f_d=$work/$1
	f_name=$(cat "$f_d.name")
	f_rc=$(cat "$f_d.rc")
	f_secs=$(cat "$f_d.secs")
	echo "# --- $f_name"
	cat "$f_d.log"
	echo "# $f_name took $f_secs s"
	echo "$f_name $f_secs" >>"$work/times"
	f_p=$(grep -cE '^ok ([0-9]+ )?- ' "$f_d.log")
	f_f=$(grep -cE '^not ok ([0-9]+ )?- ' "$f_d.log")
	if [ "$f_rc" -ne 0 ] && [ "$f_f" -eq 0 ]; then
		echo "not ok - $f_name: exited with status $f_rc"
		f_f=1
	fi
	pass=$((pass + f_p))
	fail=$((fail + f_f))
	[ "$f_f" -gt 0 ] && failed_names="$failed_names $f_name"
	f_left=$(find "$f_d" -mindepth 1 -maxdepth 1 | wc -l)
	if [ -n "${GRASPD_KEEP_TMP:-}" ]; then
		echo "# $f_name: kept its TMPDIR $f_d"
	elif [ "$f_left" -gt 0 ]; then
		echo "# $f_name left $f_left entries in its TMPDIR"
	fi
	[ -n "${GRASPD_KEEP_TMP:-}" ] || rm -rf "$f_d"
}

echo "# tests/run.sh: $nprogs programs, $jobs at a time"
t_start=$(date +%s)
mkfifo "$work/done" || exit 1
exec 3<>"$work/done"
i=0
running=0
while read -r _ name limit cmd; do
	while [ "$running" -ge "$jobs" ]; do
		read -r done_i <&3
		finish "$done_i"
		running=$((running - 1))
	done
	# shellcheck disable=SC2086  # cmd is words without spaces
	launch "$i" "$name" "$limit" $cmd
	i=$((i + 1))
	running=$((running + 1))
done <"$work/list"
while [ "$running" -gt 0 ]; do
	read -r done_i <&3
	finish "$done_i"
	running=$((running - 1))
done
exec 3<&-

# What this build measured orders the next run: the new times replace
# the old ones of the same programs.
if [ -d "$O/tests" ]; then
	cat "$times" "$work/times" 2>/dev/null | awk '{ t[$1] = $2 }
	    END { for (n in t) print n, t[n] }' | sort >"$work/times.new" &&
	    mv "$work/times.new" "$times"
fi

echo "# tests/run.sh: wall time $(($(date +%s) - t_start)) s"
[ -n "$failed_names" ] && echo "# failed:$failed_names"
# scripts/test.sh runs the suite twice and prints the grand total itself.
if [ -n "${RUN_LABEL:-}" ]; then
	echo "# $RUN_LABEL: $pass passed, $fail failed"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
