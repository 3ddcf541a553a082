#!/bin/sh
# tests/bench/strfry.sh: graspd side by side with strfry (issue #44 items 2
# and 3); `make bench` runs it last when STRFRY names a strfry binary, and
# it runs alone the same way:
#
#	STRFRY=/path/to/strfry sh tests/bench/strfry.sh
#
# strfry is not a Debian package: doc/performance.md ("Side by side with
# strfry") says how its source was built for the tables there.  Its
# default configuration, STRFRY_CONF (strfry.conf beside the binary), is
# copied with the store, the port and the file limit changed and NIP-42
# turned off.
#
# Builds nothing: it needs $BIN/graspd and its roles and
# $O/tests/bench/ingest.  For each size in BENCH_SBS_SIZES (default
# "20000 200000"): pre-signs that many GRASP-valid events (the
# announcement, the owner's state with its commit, then issues and
# comments), measures the single-core verification rate on them, then
# runs pairs (BENCH_SBS_PAIRS, 2, for the first size; BENCH_SBS_BIG_PAIRS,
# 1, for the others), strfry first, then a whole graspd (supervisor and
# roles, default configuration, the client limits off), each on a fresh
# empty store in a temporary directory on loopback: 4 connections with 50
# EVENTs in flight, the REQ probes (#a, authors, ids, kinds+#t, one at a
# time 5 ms apart) during the load and for 3 s after it, then the memory
# (RSS, PSS) of all its processes once they are quiet, the store's size,
# and each probe's REQ -> EOSE p50 and p99 at rest (BENCH_SBS_REST_N, 1000,
# back to back).  graspd also takes the state's commit by git push, as
# part one of run.sh does; strfry gets the same events without the state,
# so both store the same number.  The verification rate is measured again
# after each pair.
#
# Prints per size a table of each figure's values per pair and the ratio
# of graspd's mean to strfry's, and graspd's mean rate over the mean
# verification rate.  Figures only: it never passes or fails on time.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
# shellcheck source=tests/lib/tproc_shell.sh
. "$top/tests/lib/tproc_shell.sh"
tproc_dirs
STRFRY=${STRFRY:?set STRFRY to a strfry binary}
STRFRY_CONF=${STRFRY_CONF:-$(dirname "$STRFRY")/strfry.conf}
PAIRS=${BENCH_SBS_PAIRS:-2}
BIG_PAIRS=${BENCH_SBS_BIG_PAIRS:-1}
REST_N=${BENCH_SBS_REST_N:-1000}
SIZES=${BENCH_SBS_SIZES:-"20000 200000"}
# Seconds a quiet process tree may take to settle, and a load to end.
SETTLE_S=60
LOAD_S=1200
tproc_require strfry.sh "$ingest" "$graspd" "$STRFRY"
[ -r "$STRFRY_CONF" ] || {
	echo "strfry.sh: no $STRFRY_CONF (set STRFRY_CONF)" >&2
	exit 1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/graspd-sbs.XXXXXX")
pid=""
cleanup() {
	[ -z "$pid" ] || tproc_stop strfry.sh server "$pid" 20
	[ -n "${GRASPD_KEEP_TMP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# mem_rss, mem_pss (all the server's processes) and procs lines.
mem() {
	tproc_tree "$pid" | while read -r _p; do
		cat "/proc/$_p/smaps_rollup" 2>/dev/null
	done | awk '$1 == "Rss:" { r += $2 } $1 == "Pss:" { s += $2 }
	    END { printf "mem_rss %.1f MB\nmem_pss %.1f MB\n", r / 1024,
	    s / 1024 }'
	tproc_tree "$pid" | wc -l | awk '{ print "procs", $1, "n" }'
}

# measure PORT WAIT_MS LOG STORE OUT PUBLISH_ARG...: once the server
# ($pid) listens on PORT (WAIT_MS at most; else its LOG's end), the load
# and the probes, then, once it is quiet, its memory, the size of STORE
# and the probes at rest, all into OUT; then stops it.
measure() {
	_port=$1 _log=$3 _store=$4 _out=$5
	"$ingest" waitport 127.0.0.1 "$_port" "$2" || {
		tail "$_log" >&2
		exit 1
	}
	shift 5
	tproc_settle "$pid" 0 "$SETTLE_S" || true
	timeout "$LOAD_S" "$ingest" publish 127.0.0.1 "$_port" "$@" \
	    --conns 4 --inflight 50 >"$_out"
	tproc_settle "$pid" 0 "$SETTLE_S" || true
	{
		mem
		du -sm "$_store" | awk '{ print "disk", $1, "MB" }'
		# At rest: each probe's REQ back to back on a connection of
		# its own, the floor the paced probes above sit on.
		while read -r _name _filter; do
			timeout 120 "$ingest" req 127.0.0.1 "$_port" \
			    --filter "$_filter" --n "$REST_N" \
			    --name "rest_$_name" | grep '_p[0-9]* '
		done <"$tmp/probes"
	} >>"$_out"
	tproc_stop strfry.sh server "$pid" 30
	pid=""
}

# run_strfry DIR EVENTS PROBES OUT
run_strfry() {
	mkdir -p "$1/db"
	_sp=$("$ingest" freeport)
	sed -e "s#^db = .*#db = \"$1/db/\"#" \
	    -e "s#^    port = [0-9]*#    port = $_sp#" \
	    -e 's#nofiles = [0-9]*#nofiles = 0#' \
	    -e '/^    auth {/,/^    }/s#enabled = true#enabled = false#' \
	    "$STRFRY_CONF" >"$1/strfry.conf"
	grep -q "port = $_sp" "$1/strfry.conf" || {
		echo "strfry.sh: $STRFRY_CONF has no port line to change" >&2
		exit 1
	}
	(cd "$1" && exec "$STRFRY" --config="$1/strfry.conf" relay \
	    >"$1/log" 2>&1) &
	pid=$!
	measure "$_sp" 20000 "$1/log" "$1/db" "$4" "$2" --probes "$3"
	rm -rf "$1"
}

# run_graspd DIR PORT EVENTS PROBES SRC OUT
run_graspd() {
	# shellcheck disable=SC2086  # TPROC_NO_LIMITS is several words
	tproc_spawn "$1" "$2" "$1/graspd.log" $TPROC_NO_LIMITS "$graspd" -d
	pid=$!
	measure "$2" 120000 "$1/graspd.log" "$1/relay" "$6" "$3" --push "$5" \
	    --probes "$4"
	rm -rf "$1"
}

# The figures of the table, in its order.
KEYS="publish_ok_true publish_ok_false publish_rate publish_ok_p50
publish_ok_p99 publish_ok_max req_during_reqs req_during_p50_a
req_during_p99_a req_during_max_a req_during_p50_authors
req_during_p99_authors req_during_max_authors req_during_p50_ids
req_during_p99_ids req_during_max_ids req_during_p50_kt req_during_p99_kt
req_during_max_kt req_after_reqs req_after_p50_a req_after_p99_a
req_after_max_a req_after_p50_authors req_after_p99_authors
req_after_max_authors req_after_p50_ids req_after_p99_ids
req_after_max_ids req_after_p50_kt req_after_p99_kt req_after_max_kt
req_rest_a_p50 req_rest_a_p99 req_rest_authors_p50 req_rest_authors_p99
req_rest_ids_p50 req_rest_ids_p99 req_rest_kt_p50 req_rest_kt_p99
mem_rss mem_pss procs disk"

# table SIZE: each figure's values per pair, strfry's then graspd's, and
# the ratio of their means.
table() {
	# shellcheck disable=SC2046  # the result files, one word each
	awk -v keys="$KEYS" '
	    FNR == 1 { who = (FILENAME ~ /strfry$/) ? "s" : "g" }
	    { v[who, $1] = v[who, $1] (v[who, $1] == "" ? "" : ", ") $2
	      sum[who, $1] += $2; cnt[who, $1]++; unit[$1] = $3 }
	    END {
		nk = split(keys, k)
		print "| figure | unit | strfry | graspd | graspd/strfry (means) |"
		print "|---|---|---|---|---|"
		for (i = 1; i <= nk; i++) {
			f = k[i]
			if (cnt["s", f] == 0 && cnt["g", f] == 0)
				continue
			ms = cnt["s", f] ? sum["s", f] / cnt["s", f] : 0
			mg = cnt["g", f] ? sum["g", f] / cnt["g", f] : 0
			printf "| %s | %s | %s | %s | %s |\n", f, unit[f],
			    v["s", f], v["g", f],
			    (ms > 0 ? sprintf("%.2f", mg / ms) : "-")
		}
	    }' $(ls "$tmp"/r-"$1"-*-strfry "$tmp"/r-"$1"-*-graspd)
}

echo "# strfry.sh: $(date -u +%FT%TZ) graspd $BIN ($(git log -1 --format=%h \
    2>/dev/null || echo ?)), strfry $STRFRY"
echo "# strfry.sh: $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
first=1
for size in $SIZES; do
	gp=$("$ingest" freeport)
	timeout 900 "$ingest" gen $((size + 2)) "$tmp/ev.jsonl" \
	    --domain "127.0.0.1:$gp" --git-dir "$tmp/src" >"$tmp/gen.out"
	# Line 2 is the state: strfry has no git to push its commit to.
	sed 2d "$tmp/ev.jsonl" >"$tmp/ev-strfry.jsonl"
	tproc_probes "$tmp/gen.out" "$tmp/probes"
	"$ingest" verify "$tmp/ev.jsonl" >"$tmp/verify-$size"
	n=$BIG_PAIRS
	[ "$first" = 0 ] || n=$PAIRS
	first=0
	i=1
	while [ "$i" -le "$n" ]; do
		echo "# strfry.sh: $size events, pair $i (load" \
		    "$(cut -d' ' -f1 /proc/loadavg))" >&2
		run_strfry "$tmp/s" "$tmp/ev-strfry.jsonl" "$tmp/probes" \
		    "$tmp/r-$size-$i-strfry"
		run_graspd "$tmp/g" "$gp" "$tmp/ev.jsonl" "$tmp/probes" \
		    "$tmp/src" "$tmp/r-$size-$i-graspd"
		"$ingest" verify "$tmp/ev.jsonl" >>"$tmp/verify-$size"
		i=$((i + 1))
	done
	rm -rf "$tmp/src"
	echo
	echo "## $size events, $n pair(s), strfry first in each"
	awk '{ print $2 }' "$tmp/verify-$size" | paste -sd' ' - |
	    sed 's/ /, /g; s/^/verify_rate (single core, same run): /;
	    s/$/ events\/s/'
	table "$size"
	awk '$1 == "publish_rate" { g += $2; n++ } END { print g / n }' \
	    "$tmp"/r-"$size"-*-graspd >"$tmp/grate"
	awk -v g="$(cat "$tmp/grate")" '{ s += $2; n++ }
	    END { printf "graspd mean accepted rate / mean verify rate: %.2f\n",
	    g / (s / n) }' "$tmp/verify-$size"
done
echo "# strfry.sh: done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 \
    /proc/loadavg)"
