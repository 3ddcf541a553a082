#!/bin/sh
# tests/bench/run.sh: the relayd ingest and query benchmark (`make bench`),
# then the sync pull benchmark (tests/bench/pull.sh).
#
# Builds nothing: it needs $BIN/relayd and $O/tests/bench/ingest.  Starts
# relayd on a free loopback port in a temporary directory, pre-signs the
# events, publishes them over 4 connections with 50 EVENTs in flight each,
# measures the OK latency of events published one at a time and the
# REQ -> EOSE time of #a, #e/#E, authors and ids queries, prints one table,
# writes the same figures to $O/bench.json, stops relayd and removes the
# directory (kept when GRASPD_KEEP_TMP is set).  Figures only: it never
# passes or fails on time, only when something breaks.
#
# Sizes: BENCH_EVENTS (20000 published in parallel), BENCH_SERIAL (1000
# published one at a time), BENCH_REQS (1000 round trips per query).
set -eu

O=${O:-build}
BIN=${BIN:-bin}
EVENTS=${BENCH_EVENTS:-20000}
SERIAL=${BENCH_SERIAL:-1000}
REQS=${BENCH_REQS:-1000}

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
case $O in /*) ;; *) O=$top/$O ;; esac
case $BIN in /*) ;; *) BIN=$top/$BIN ;; esac
ingest=$O/tests/bench/ingest
relayd=$BIN/relayd
for f in "$relayd" "$ingest"; do
	if [ ! -x "$f" ]; then
		echo "bench: $f is missing; build first: make all tests" >&2
		exit 1
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/graspd-bench.XXXXXX")
pid=""

stop_relay() {
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	n=0
	while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 50 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "bench: relayd ignored SIGTERM for 5 s, killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	pid=""
}

cleanup() {
	stop_relay
	if [ -n "${GRASPD_KEEP_TMP:-}" ]; then
		echo "bench: kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	echo "bench: $*" >&2
	if [ -f "$tmp/relayd.log" ]; then
		echo "bench: last lines of the relayd log:" >&2
		tail -n 20 "$tmp/relayd.log" | sed 's/^/# /' >&2
	fi
	exit 1
}

port=$("$ingest" freeport) || fail "no free loopback port"
domain=127.0.0.1:$port
mkdir "$tmp/relay" "$tmp/git" "$tmp/run"
(
	cd "$tmp"
	exec env NGIT_BIND_ADDRESS="$domain" NGIT_DOMAIN="$domain" \
	    NGIT_RELAY_DATA_PATH="$tmp/relay" NGIT_GIT_DATA_PATH="$tmp/git" \
	    NGIT_RUN_PATH="$tmp/run" NGIT_TEST=1 \
	    NGIT_MAX_EVENTS_PER_MINUTE=0 "$relayd" >"$tmp/relayd.log" 2>&1
) &
pid=$!
"$ingest" waitport 127.0.0.1 "$port" 10000 ||
    fail "relayd is not listening on $domain after 10 s"

# The announcement and the owner's state event come first; relayd holds
# the announcement in purgatory until the push of the state's commit.
echo "# bench: relayd on $domain, signing $((EVENTS + SERIAL + 2)) events"
timeout 600 "$ingest" gen $((EVENTS + SERIAL + 2)) "$tmp/events.jsonl" \
    --domain "$domain" --git-dir "$tmp/src" >"$tmp/gen.out" ||
    fail "ingest gen failed"
owner=$(awk '$1 == "gen_owner" { print $2 }' "$tmp/gen.out")
issue=$(awk '$1 == "gen_sample_issue" { print $2 }' "$tmp/gen.out")
author=$(awk '$1 == "gen_sample_author" { print $2 }' "$tmp/gen.out")
ids=$(awk '$1 == "gen_sample_ids" { gsub(",", "\",\"", $2); print $2 }' \
    "$tmp/gen.out")
grep -E '^gen_(events|seconds) ' "$tmp/gen.out" >"$tmp/figures"

echo "# bench: publishing $EVENTS events (4 x 50 in flight), then $SERIAL" \
    "one at a time"
timeout 900 "$ingest" publish 127.0.0.1 "$port" "$tmp/events.jsonl" \
    --conns 4 --inflight 50 --serial "$SERIAL" --push "$tmp/src" \
    >>"$tmp/figures" || fail "ingest publish failed"

echo "# bench: $REQS REQ -> EOSE round trips per query"
req() {
	name=$1
	filter=$2
	timeout 600 "$ingest" req 127.0.0.1 "$port" --n "$REQS" \
	    --name "$name" --filter "$filter" >>"$tmp/figures" ||
	    fail "ingest req $name failed"
}
req a "{\"#a\":[\"30617:$owner:bench\"],\"limit\":100}"
req eE "[{\"#e\":[\"$issue\"]},{\"#E\":[\"$issue\"]}]"
req authors "{\"authors\":[\"$author\"],\"limit\":100}"
req ids "{\"ids\":[\"$ids\"]}"
stop_relay

echo
printf '%-26s %14s  %s\n' figure value unit
awk '$2 ~ /^[0-9.]+$/ { printf "%-26s %14s  %s\n", $1, $2, $3 }' \
    "$tmp/figures"

mkdir -p "$O"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
awk -v commit="$commit" '
BEGIN { printf "{\n  \"commit\": \"%s\",\n  \"figures\": {", commit; n = 0 }
$2 ~ /^[0-9.]+$/ {
	printf "%s\n    \"%s\": {\"value\": %s, \"unit\": \"%s\"}", \
	    (n++ ? "," : ""), $1, $2, $3
}
END { printf "\n  }\n}\n" }' "$tmp/figures" >"$O/bench.json"
echo "# bench: figures written to $O/bench.json"

# The sync pull benchmark adds its figures to the same file.
O=$O BIN=$BIN sh "$top/tests/bench/pull.sh"
