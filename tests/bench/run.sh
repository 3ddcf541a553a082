#!/bin/sh
# tests/bench/run.sh: the relayd benchmarks (`make bench`), then the sync
# pull benchmark (tests/bench/pull.sh).
#
# Builds nothing: it needs $BIN/graspd and its roles,
# $O/tests/bench/ingest, $O/tests/bench/inventory and $O/tests/bench/web.  Part one starts
# relayd alone on a free loopback port in a temporary directory,
# pre-signs the events, measures the
# single-core signature verification rate on them, publishes them over 4
# connections with 50 EVENTs in flight each, measures the OK latency of
# events published one at a time, the REQ -> EOSE time of #a, #e/#E,
# authors and ids queries, the live fan-out of one event to BENCH_SUBS
# subscribers and NIP-11 over HTTP with wrk.  Then a full graspd on an
# empty store takes the same events the same way (with the CPU each of
# its relayd's threads took per event, load_cpu_*), and the memory of each
# of its processes is read once they are quiet (mem_load_*; skipped with
# BENCH_NO_LOAD_MEM=1).  Part two starts a full
# graspd (supervisor and every role) on an empty store, reads the
# resident memory of all its processes once they are idle, stops it, puts
# BENCH_BIG events straight into its database, runs the same queries on
# that store with relayd alone (its start-up time and memory too), then
# starts the full graspd on it and reads the memory of all processes
# again (mem_big_*); then removes the store's copy and syncs, so that the kernel's
# writeback does not run beside the timed phases after it.
# Part three times the GRASP-03 inventory's start-up rebuild
# (tests/bench/inventory.c) on 1.1 million generated events, part four
# the rendering of the landing page for 10,000 repositories
# (tests/bench/web.c) and of an issue's page with 1,000 replies, with
# relayd's memory (tests/bench/thread.c); part five the git pages: a
# commit page with a 5,000-line diff and a tree page of 10,000 entries,
# with relayd's memory (tests/bench/webgit.c).
# Prints one table, writes the same figures to $O/bench.json, stops
# everything and removes the directory (kept when GRASPD_KEEP_TMP is set).
# Figures only: it never passes or fails on time, only when something
# breaks.
#
# Sizes: BENCH_EVENTS (20000 published in parallel), BENCH_SERIAL (1000
# published one at a time), BENCH_REQS (1000 round trips per query),
# BENCH_SUBS (1000 fan-out subscribers), BENCH_BIG (1000000 stored events
# for part two; 0 skips part two), BENCH_WEB_REPOS (10000 repositories
# for part four), BENCH_THREAD_REPLIES (1000 replies for part four).
# BENCH_NO_PULL=1 skips pull.sh, BENCH_NO_INVENTORY=1
# the inventory start-up benchmark, BENCH_NO_WEB=1 the web page ones,
# BENCH_NO_WEBGIT=1 the git pages one,
# BENCH_NO_DURABILITY=1 the durability pair: after part one, two fresh
# relayds, durability full then normal, take the same events (figures
# durability_{full,normal}_{publish_rate,publish_ok_p99,serial_ok_p50,
# serial_ok_p99} and durability_full_normal_ratio;
# BENCH_DURABILITY_ORDER="normal full" runs them the other way round),
# BENCH_NO_GIT=1 the git serving benchmark (tests/bench/git.sh: graspd
# beside nginx + git-http-backend, and git maintenance's effect).
# Part five (tests/bench/scale.c, issue #44 item 5): syncd with
# BENCH_SCALE_REPOS (10000) hosted repositories listing BENCH_SCALE_PEERS
# (100) remote relays (test peers) in all, BENCH_SCALE_PER_REPO (3) each:
# its connections, the subscriptions open per relay, its memory, the time
# from the start to every live subscription open and the cost of adding
# one repository; skipped with BENCH_NO_SCALE=1.  Part six
# (tests/bench/fed.c, item 6): three graspd serving one repository with
# production timing, BENCH_FED_N (20) times the time from OK on one to
# served by the other two, for an issue and for a state + push
# (p50/p99/max); skipped with BENCH_NO_FED=1.  With STRFRY naming a
# strfry binary, the last part is graspd and strfry side by side
# (tests/bench/strfry.sh, whose header says what it runs).
set -eu

EVENTS=${BENCH_EVENTS:-20000}
SERIAL=${BENCH_SERIAL:-1000}
REQS=${BENCH_REQS:-1000}
SUBS=${BENCH_SUBS:-1000}
BIG=${BENCH_BIG:-1000000}
# Wall time wrk loads the NIP-11 document, and its connections.
WRK_SECONDS=5
WRK_CONNS=50

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
# shellcheck source=tests/lib/tproc_shell.sh
. "$top/tests/lib/tproc_shell.sh"
tproc_dirs
inventory=$O/tests/bench/inventory
web=$O/tests/bench/web
thread=$O/tests/bench/thread
webgit=$O/tests/bench/webgit
scale=$O/tests/bench/scale
fed=$O/tests/bench/fed
peer=$O/tests/peer/peer
tproc_require bench "$relayd" "$graspd" "$ingest" "$inventory" "$web" \
    "$thread" "$webgit" "$scale" "$fed" "$peer"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/graspd-bench.XXXXXX")
pid=""

stop_relay() {
	[ -n "$pid" ] || return 0
	tproc_stop bench "$pid" "$pid" 10
	pid=""
}

cleanup() {
	stop_relay
	tproc_rmtmp bench "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	tproc_fail bench "$*" "$tmp/relayd.log" "$tmp/big/graspd.log"
}

port=$("$ingest" freeport) || fail "no free loopback port"
domain=127.0.0.1:$port
# shellcheck disable=SC2086  # TPROC_NO_LIMITS is a list
tproc_spawn "$tmp" "$port" "$tmp/relayd.log" NGIT_TEST=1 $TPROC_NO_LIMITS \
    "$relayd"
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

echo "# bench: single-core signature verification rate"
"$ingest" verify "$tmp/events.jsonl" >>"$tmp/figures" ||
    fail "ingest verify failed"

# The four query shapes, issued in turn on a fifth connection, one every
# 5 ms (ingest.c, BENCH_PROBE_GAP_US), during the parallel publishing and
# for 3 s after its last OK.
tproc_probes "$tmp/gen.out" "$tmp/probes"
echo "# bench: publishing $EVENTS events (4 x 50 in flight, REQs beside" \
    "them), then $SERIAL one at a time"
timeout 900 "$ingest" publish 127.0.0.1 "$port" "$tmp/events.jsonl" \
    --conns 4 --inflight 50 --serial "$SERIAL" --push "$tmp/src" \
    --probes "$tmp/probes" >>"$tmp/figures" || fail "ingest publish failed"

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
req kt "{\"kinds\":[1621],\"#t\":[\"bench\"],\"limit\":100}"

echo "# bench: fan-out of one event to $SUBS subscribers"
timeout 600 "$ingest" fanout 127.0.0.1 "$port" --subs "$SUBS" \
    --a "30617:$owner:bench" >>"$tmp/figures" || fail "ingest fanout failed"

if command -v wrk >/dev/null 2>&1; then
	echo "# bench: NIP-11 with wrk, $WRK_CONNS connections," \
	    "$WRK_SECONDS s"
	wrk -t1 -c"$WRK_CONNS" -d"$WRK_SECONDS"s \
	    -H 'Accept: application/nostr+json' "http://$domain/" \
	    >"$tmp/wrk.out" 2>&1 || fail "wrk failed: $(cat "$tmp/wrk.out")"
	awk '$1 == "Requests/sec:" { print "nip11_rate", $2, "req/s" }
	    /Non-2xx/ { print "nip11_non2xx", $NF, "responses" }' \
	    "$tmp/wrk.out" >>"$tmp/figures"
else
	echo "# bench: wrk is missing (sh scripts/deps.sh --bench);" \
	    "no NIP-11 figure" >&2
fi
stop_relay

# durability full (the default: the WAL synced at each commit before its
# OKs) beside normal (synced at checkpoints only), each a fresh relayd
# alone on part one's address taking the same events without probes:
# events/s over 4 x 50 in flight, then the OK latency of one client
# publishing one event at a time (each waits for a sync under full).
if [ -z "${BENCH_NO_DURABILITY:-}" ]; then
	for d in ${BENCH_DURABILITY_ORDER:-full normal}; do
		echo "# bench: durability $d, relayd alone, the same events"
		mkdir -p "$tmp/dur-$d"
		# shellcheck disable=SC2086  # TPROC_NO_LIMITS is a list
		tproc_spawn "$tmp/dur-$d" "$port" "$tmp/dur-$d/relayd.log" \
		    NGIT_TEST=1 NGIT_DURABILITY=$d $TPROC_NO_LIMITS "$relayd"
		pid=$!
		"$ingest" waitport 127.0.0.1 "$port" 10000 ||
		    fail "relayd (durability $d) is not listening after 10 s"
		timeout 900 "$ingest" publish 127.0.0.1 "$port" \
		    "$tmp/events.jsonl" --conns 4 --inflight 50 \
		    --serial "$SERIAL" --push "$tmp/src" >"$tmp/dur-$d.out" ||
		    fail "ingest publish (durability $d) failed"
		awk -v d="$d" '$1 ~ /^(publish_rate|publish_ok_p99|serial_ok_p50|serial_ok_p99)$/ {
		    print "durability_" d "_" $1, $2, $3 }' \
		    "$tmp/dur-$d.out" >>"$tmp/figures"
		stop_relay
	done
	awk '$1 == "durability_full_publish_rate" { f = $2 }
	    $1 == "durability_normal_publish_rate" { n = $2 }
	    END { if (f > 0 && n > 0) printf "durability_full_normal_ratio" \
	    " %.3f ratio\n", f / n }' "$tmp/figures" >"$tmp/dur-ratio"
	cat "$tmp/dur-ratio" >>"$tmp/figures"
fi

# tree: the process $pid and its children (graspd's roles), one a line.
tree() {
	tproc_tree "$pid"
}

# rss: resident kB of $pid and its children (graspd's roles), to stdout.
rss() {
	tree | while read -r p; do cat "/proc/$p/status" 2>/dev/null; done |
	    awk '$1 == "VmRSS:" { kb += $2 } END { print kb + 0 }'
}

# pss: proportional set size in kB of the same processes (shared library
# pages counted once across them, not once per process as RSS does).
pss() {
	tree | while read -r p; do cat "/proc/$p/smaps_rollup" 2>/dev/null
	    done | awk '$1 == "Pss:" { kb += $2 } END { print kb + 0 }'
}

# settle: waits until graspd's four roles run and, together with it, used
# at most 2 clock ticks (20 ms) of CPU a second for two seconds in a row
# (at most 300 s), so that their start-up work (each rebuilds its state
# from the store) is done; the roles' periodic passes may go on.
settle() {
	tproc_settle "$pid" 5 300 && return 0
	echo "bench: graspd and four roles not settled after 300 s" >&2
	return 1
}

# start_graspd DIR PORT [MS]: a full graspd in DIR on 127.0.0.1:PORT.
# Fails when it is not listening after 120 s; with MS, waits that long and
# then stops it and leaves pid empty instead.
start_graspd() {
	# shellcheck disable=SC2086  # TPROC_NO_LIMITS is a list
	tproc_spawn "$1" "$2" "$1/graspd.log" $TPROC_NO_LIMITS "$graspd" -d
	pid=$!
	if [ -n "${3:-}" ]; then
		"$ingest" waitport 127.0.0.1 "$2" "$3" || stop_relay
		return 0
	fi
	"$ingest" waitport 127.0.0.1 "$2" 120000 ||
	    fail "graspd is not listening on port $2 after 120 s"
}

# mem: the resident, proportional, private and anonymous kB of each of
# graspd's processes (named by their command) and the sums, as figures
# mem_TAG_PROCESS_{rss,pss,private,anon} and mem_TAG_total_* (anonymous:
# the heap and other memory no file backs, which the kernel cannot drop;
# issue 44's bound is on its total).
mem() {
	tree | while read -r p; do
		n=$(cat "/proc/$p/comm" 2>/dev/null) || continue
		awk -v n="$n" -v t="$1" '
		    $1 == "Rss:" { r = $2 } $1 == "Pss:" { s = $2 }
		    $1 ~ /^Private_(Clean|Dirty):$/ { v += $2 }
		    $1 == "Anonymous:" { a = $2 }
		    END { printf "mem_%s_%s_rss %d kB\nmem_%s_%s_pss %d kB\n" \
		    "mem_%s_%s_private %d kB\nmem_%s_%s_anon %d kB\n", \
		    t, n, r, t, n, s, t, n, v, t, n, a }' \
		    "/proc/$p/smaps_rollup" 2>/dev/null
	done | awk '{ print; split($1, f, "_"); k = f[length(f)]
	    sum[k] += $2 } END { for (k in sum) printf "mem_'"$1"'_total_%s" \
	    " %d kB\n", k, sum[k] }'
}

# relayd_threads: each thread of the full graspd's relayd, one a line:
# its id, its name (loop, sig for relayd-sig, ckpt, or other for the
# libraries' threads) and the nanoseconds it has run (schedstat).
relayd_threads() {
	for p in $(tree); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = relayd ] || continue
		for t in /proc/"$p"/task/*; do
			n=$(cat "$t/comm")
			if [ "${t##*/}" = "$p" ]; then
				n=loop
			elif [ "$n" = relayd ]; then
				n=other
			fi
			echo "${t##*/} ${n#relayd-}" \
			    "$(cut -d' ' -f1 "$t/schedstat")"
		done
	done 2>/dev/null
}

# Memory after the load: a full graspd (supervisor and every role) on an
# empty store, on part one's address (the events name it), takes the
# same events over 4 connections with 50 in flight, and each process's
# memory is read once they are quiet again (issue #22 compares their sum
# with strfry's 60 MB).
if [ -z "${BENCH_NO_LOAD_MEM:-}" ]; then
	echo "# bench: full graspd on $domain, the same $((EVENTS + SERIAL))" \
	    "events, then its memory"
	start_graspd "$tmp/load" "$port"
	relayd_threads >"$tmp/cpu0"
	timeout 900 "$ingest" publish 127.0.0.1 "$port" "$tmp/events.jsonl" \
	    --conns 4 --inflight 50 --push "$tmp/src" >"$tmp/load.out" ||
	    fail "ingest publish to graspd failed"
	relayd_threads >"$tmp/cpu1"
	# The CPU each of relayd's threads took per event: less noisy than
	# the rates on a machine shared with other jobs.
	awk -v n=$((EVENTS + SERIAL)) 'NR == FNR { t0[$1] = $3; next }
	    { ns[$2] += $3 - t0[$1] } END { for (k in ns)
	    printf "load_cpu_%s_us %.2f us\n", k, ns[k] / 1000 / n }' \
	    "$tmp/cpu0" "$tmp/cpu1" >>"$tmp/figures"
	awk '$1 == "publish_rate" { print "load_publish_rate", $2, $3 }
	    $1 == "publish_ok_p99" { print "load_publish_ok_p99", $2, $3 }' \
	    "$tmp/load.out" >>"$tmp/figures"
	settle || fail "graspd does not settle after the load"
	mem load >>"$tmp/figures"
	stop_relay
fi

if [ "$BIG" -gt 0 ]; then
	bport=$("$ingest" freeport) || fail "no free loopback port"
	echo "# bench: graspd on 127.0.0.1:$bport, empty"
	start_graspd "$tmp/big" "$bport"
	settle || fail "graspd does not settle on an empty store"
	echo "rss_idle_start $(rss) kB" >>"$tmp/figures"
	echo "pss_idle_start $(pss) kB" >>"$tmp/figures"
	stop_relay

	# Signing a million events takes minutes: the store is made once
	# per size and build directory and copied into each run.
	cache=$O/bench-store-$BIG
	if [ ! -f "$cache/graspd.db" ]; then
		echo "# bench: signing and storing $BIG events into" \
		    "$cache (once)"
		rm -rf "$cache.new"
		mkdir -p "$cache.new"
		timeout 3600 "$ingest" fill "$BIG" "$cache.new/graspd.db" \
		    --domain "127.0.0.1:$bport" >"$cache.new/fill.out" \
		    2>"$tmp/fill.log" || fail "ingest fill failed"
		mv "$cache.new" "$cache"
		grep -E '^fill_(events|seconds) ' "$cache/fill.out" \
		    >>"$tmp/figures"
	fi
	cp "$cache/graspd.db" "$tmp/big/relay/graspd.db"
	owner=$(awk '$1 == "fill_owner" { print $2 }' "$cache/fill.out")
	issue=$(awk '$1 == "fill_sample_issue" { print $2 }' \
	    "$cache/fill.out")
	author=$(awk '$1 == "fill_sample_author" { print $2 }' \
	    "$cache/fill.out")
	ids=$(awk '$1 == "fill_sample_ids" { gsub(",", "\",\"", $2);
	    print $2 }' "$cache/fill.out")

	echo "# bench: relayd alone on the large store"
	t0=$(date +%s)
	tproc_spawn "$tmp/big" "$bport" "$tmp/relayd.log" "$relayd"
	pid=$!
	"$ingest" waitport 127.0.0.1 "$bport" 600000 ||
	    fail "relayd is not listening on the large store after 600 s"
	# relayd binds its port first, then opens the store (and, the first
	# time on a database older than the inventory's tables, builds
	# them): it answers once a REQ gets its EOSE.
	n=0
	until "$ingest" req 127.0.0.1 "$bport" --n 1 --name start \
	    --filter '{"limit":1}' >/dev/null 2>&1; do
		n=$((n + 1))
		[ "$n" -lt 600 ] ||
		    fail "relayd does not answer on the large store after 600 s"
		sleep 1
	done
	echo "big_relayd_start_seconds $(($(date +%s) - t0)) s" \
	    >>"$tmp/figures"
	port=$bport
	req a_big "{\"#a\":[\"30617:$owner:bench\"],\"limit\":100}"
	req eE_big "[{\"#e\":[\"$issue\"]},{\"#E\":[\"$issue\"]}]"
	req authors_big "{\"authors\":[\"$author\"],\"limit\":100}"
	req ids_big "{\"ids\":[\"$ids\"]}"
	echo "rss_relayd_big $(rss) kB" >>"$tmp/figures"
	stop_relay

	# The supervisor gives a role SUP_READY_TIMEOUT (60 s) to become
	# ready; a relayd slower than that on this store never is, and roles
	# busy with periodic passes never look quiet.
	echo "# bench: full graspd on the large store"
	start_graspd "$tmp/big" "$bport" 150000
	if [ -n "$pid" ] && settle; then
		echo "rss_idle_big $(rss) kB" >>"$tmp/figures"
		echo "pss_idle_big $(pss) kB" >>"$tmp/figures"
		mem big >>"$tmp/figures"
		stop_relay
	else
		stop_relay
		echo "big_graspd_settled 0 bool" >>"$tmp/figures"
		echo "# bench: graspd and its roles did not become ready and" \
		    "quiet on the large store; no memory figure" >&2
	fi
	# The phases after this one are timed: the copy of the large store
	# goes (unless kept), and what it left for the kernel to write out
	# is written now, not beside the inventory rebuild or the pull.
	[ -n "${GRASPD_KEEP_TMP:-}" ] || rm -rf "$tmp/big"
	sync
fi

# The GRASP-03 inventory's start-up rebuild (tests/bench/inventory.c) on
# 1.1 million generated events, kept in $O/bench-inventory.db for later
# runs.
if [ -z "${BENCH_NO_INVENTORY:-}" ]; then
	echo "# bench: inventory rebuild (the database is made once)"
	BENCH_INV_DB=$O/bench-inventory.db timeout 3600 "$inventory" \
	    >"$tmp/inventory.out" 2>"$tmp/inventory.log" ||
	    fail "inventory bench failed: $(tail -n 5 "$tmp/inventory.log")"
	cat "$tmp/inventory.out" >>"$tmp/figures"
fi

# part NAME PROGRAM [ARG...]: a benchmark program that starts the servers
# it needs itself (from $BIN, test peers from $peer); its figures are
# added, its stderr kept in $tmp/NAME.log.
part() {
	_name=$1
	shift
	GRASPD_BIN=$BIN GRASPD_PEER=$peer timeout 600 "$@" \
	    >"$tmp/$_name.out" 2>"$tmp/$_name.log" ||
	    fail "$_name bench failed: $(tail -n 5 "$tmp/$_name.log")"
	cat "$tmp/$_name.out" >>"$tmp/figures"
}

# The landing page rendered for BENCH_WEB_REPOS repositories (issue #18:
# under 50 ms for 10,000), relayd alone on a store made for it.
if [ -z "${BENCH_NO_WEB:-}" ]; then
	echo "# bench: landing page for ${BENCH_WEB_REPOS:-10000} repositories"
	part web "$web" "${BENCH_WEB_REPOS:-10000}"
fi

# syncd with many repositories and many remote relays (issue #44 item 5).
if [ -z "${BENCH_NO_SCALE:-}" ]; then
	echo "# bench: syncd with ${BENCH_SCALE_REPOS:-10000} repositories" \
	    "and ${BENCH_SCALE_PEERS:-100} remote relays"
	part scale "$scale"
fi

# Federation latency between three graspd (issue #44 item 6).
if [ -z "${BENCH_NO_FED:-}" ]; then
	echo "# bench: federation latency, three graspd," \
	    "${BENCH_FED_N:-20} rounds"
	part fed "$fed"
fi

# The page of an issue with BENCH_THREAD_REPLIES replies (issue 43: under
# 50 ms for 1,000), and relayd's memory while it serves it.
if [ -z "${BENCH_NO_WEB:-}" ]; then
	echo "# bench: thread page of ${BENCH_THREAD_REPLIES:-1000} replies"
	part thread "$thread" "${BENCH_THREAD_REPLIES:-1000}"
fi

# The git pages (issue 43: under 50 ms each): a commit page with a
# 5,000-line diff, a tree page of 10,000 entries, relayd's memory.
if [ -z "${BENCH_NO_WEBGIT:-}" ]; then
	echo "# bench: git pages: a 5,000-line diff, a 10,000-entry tree"
	part webgit "$webgit"
fi

# Ingest as a fraction of the verification limit measured above.
ratio=$(awk '$1 == "publish_rate" { p = $2 } $1 == "verify_rate" { v = $2 }
    END { if (p > 0 && v > 0) printf "publish_verify_ratio %.3f ratio\n",
    p / v }' "$tmp/figures")
[ -z "$ratio" ] || echo "$ratio" >>"$tmp/figures"
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

# The sync pull benchmark adds its figures to the same file, then the git
# serving one.
[ -n "${BENCH_NO_PULL:-}" ] || O=$O BIN=$BIN sh "$top/tests/bench/pull.sh"
[ -n "${BENCH_NO_GIT:-}" ] ||
    O=$O BIN=$BIN timeout 1500 sh "$top/tests/bench/git.sh"
# Beside strfry, when it is there: about 6 minutes on 2 cores.
[ -z "${STRFRY:-}" ] ||
    O=$O BIN=$BIN timeout 3600 sh "$top/tests/bench/strfry.sh"
