#!/bin/sh
# tests/bench/pull.sh: the sync pull benchmark (`make bench` runs it after
# run.sh).  How long syncd takes to pull one repository's history from a
# peer graspd into an empty store, and at what rate.
#
# Builds nothing: it needs $BIN/graspd and its roles, $O/tests/bench/ingest
# and $O/tests/bench/pull.  Starts graspd A (sync off: it is only the
# source) on a free loopback port, pre-signs BENCH_PULL_EVENTS (20000)
# issues and comments of one repository whose announcement lists A and the
# two Bs below, releases the repository on A (state and git push) and
# publishes the events to A.  Then starts graspd B, empty, with A as its
# bootstrap relay: the announcement reaches B by sync and waits in
# purgatory until the helper publishes the state to B and pushes the
# commit there, as a maintainer would; from that push on, the time until
# B stores as many events as A is measured.  Twice: B1 with production
# timing, B2 with NGIT_TEST (REQ pacing, batch window and timeouts
# shortened, as in the integration tests).
#
# Prints "figure value unit" lines, appends them to the figures of
# $O/bench.json (written by run.sh; made here when missing), stops
# everything and removes the directory (kept when GRASPD_KEEP_TMP is set).
# Figures only: it never passes or fails on time, only when something
# breaks or stalls for BENCH_PULL_STALL_MS (120000).
set -eu

EVENTS=${BENCH_PULL_EVENTS:-20000}
STALL=${BENCH_PULL_STALL_MS:-120000}

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
# shellcheck source=tests/lib/tproc_shell.sh
. "$top/tests/lib/tproc_shell.sh"
tproc_dirs
pull=$O/tests/bench/pull
tproc_require bench "$graspd" "$relayd" "$BIN/syncd" "$ingest" "$pull"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/graspd-pull.XXXXXX")
pids=""

stop_all() {
	for p in $pids; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in $pids; do
		tproc_stop bench "graspd $p" "$p" 10
	done
	pids=""
}

cleanup() {
	stop_all
	tproc_rmtmp bench "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	tproc_fail bench "$*" "$tmp"/*/log
}

# start NAME PORT ENV...: graspd in $tmp/NAME on 127.0.0.1:PORT.
start() {
	name=$1
	port=$2
	shift 2
	# shellcheck disable=SC2086  # TPROC_NO_LIMITS is a list
	tproc_spawn "$tmp/$name" "$port" "$tmp/$name/log" $TPROC_NO_LIMITS \
	    "$@" "$graspd" -d
	pids="$pids $!"
	"$ingest" waitport 127.0.0.1 "$port" 10000 ||
	    fail "graspd $name is not listening on port $port after 10 s"
}

owner=5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a
pa=$("$ingest" freeport) || fail "no free loopback port"
pb1=$("$ingest" freeport) || fail "no free loopback port"
pb2=$("$ingest" freeport) || fail "no free loopback port"
start a "$pa" NGIT_TEST=1 NGIT_SYNC_ENABLED=false

echo "# bench: graspd A on 127.0.0.1:$pa, signing $EVENTS events"
timeout 600 "$ingest" gen $((EVENTS + 2)) "$tmp/events.jsonl" \
    --domain "127.0.0.1:$pa" --repo-owner-seckey "$owner" \
    --git-dir "$tmp/src" >"$tmp/gen.out" || fail "ingest gen failed"
"$pull" announce "$tmp/events.jsonl" --owner-seckey "$owner" \
    --domains "127.0.0.1:$pa,127.0.0.1:$pb1,127.0.0.1:$pb2" ||
    fail "pull announce failed"
echo "# bench: publishing them to A"
timeout 900 "$ingest" publish 127.0.0.1 "$pa" "$tmp/events.jsonl" \
    --conns 4 --inflight 50 --push "$tmp/src" >"$tmp/publish.out" ||
    fail "ingest publish failed"

: >"$tmp/figures"
# pull_from_a NAME PORT PREFIX ENV...: an empty graspd B pulls from A.
pull_from_a() {
	name=$1
	port=$2
	prefix=$3
	shift 3
	echo "# bench: graspd $name (${prefix%_}) pulls from A"
	start "$name" "$port" \
	    NGIT_SYNC_BOOTSTRAP_RELAY_URL="ws://127.0.0.1:$pa" \
	    NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true "$@"
	timeout 3600 "$pull" sync 127.0.0.1 "$port" "$tmp/events.jsonl" \
	    "$tmp/src" --source "127.0.0.1:$pa" --stall-ms "$STALL" \
	    >"$tmp/$name.out" || fail "pull sync on $name failed"
	sed "s/^pull_/$prefix/" "$tmp/$name.out" >>"$tmp/figures"
}
pull_from_a b1 "$pb1" pull_
pull_from_a b2 "$pb2" pull_test_timing_ NGIT_TEST=1
stop_all

echo
printf '%-34s %14s  %s\n' figure value unit
awk '$2 ~ /^[0-9.]+$/ { printf "%-34s %14s  %s\n", $1, $2, $3 }' \
    "$tmp/figures"

# Add to run.sh's figures (replacing those of an earlier pull.sh run), or
# start the file.
mkdir -p "$O"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -f "$O/bench.json" ] && grep -q '^  "figures": {' "$O/bench.json" ||
    printf '{\n  "commit": "%s",\n  "figures": {\n  }\n}\n' "$commit" \
    >"$O/bench.json"
awk -v ff="$tmp/figures" '
BEGIN {
	while ((getline l < ff) > 0) {
		split(l, f, " ")
		if (f[2] !~ /^[0-9.]+$/)
			continue
		nn++
		name[nn] = f[1]
		line[nn] = sprintf("    \"%s\": {\"value\": %s, \"unit\": " \
		    "\"%s\"}", f[1], f[2], f[3])
		isnew["\"" f[1] "\""] = 1
	}
}
# One figure a line: keep the others, in order, without their comma.
/^    "/ && !done {
	split($0, q, ":")
	sub(/^ +/, "", q[1])
	if (!(q[1] in isnew)) {
		l = $0
		sub(/,$/, "", l)
		keep[++nk] = l
	}
	next
}
/^  }$/ && !done {
	for (i = 1; i <= nk; i++)
		printf "%s%s\n", keep[i], (i < nk || nn ? "," : "")
	for (i = 1; i <= nn; i++)
		printf "%s%s\n", line[i], (i < nn ? "," : "")
	done = 1
}
{ print }' "$O/bench.json" >"$tmp/bench.json"
mv "$tmp/bench.json" "$O/bench.json"
echo "# bench: figures added to $O/bench.json"
