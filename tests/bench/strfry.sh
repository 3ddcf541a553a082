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
# (RSS, PSS) of all its processes once they are quiet and the store's
# size.  graspd also takes the state's commit by git push, as part one of
# run.sh does; strfry gets the same events without the state, so both
# store the same number.  The verification rate is measured again after
# each pair.
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

# The server's process and its children, one pid a line.
tree() {
	echo "$pid"
	cat "/proc/$pid/task/"*/children 2>/dev/null | tr ' ' '\n' |
	    grep -v '^$' || true
}

# Waits until the tree used at most 2 clock ticks a second twice in a
# row, SETTLE_S seconds at most.
settle() {
	_last=-1 _still=0 _k=0
	while [ "$_k" -lt "$SETTLE_S" ]; do
		_t=$(tree | while read -r _p; do
			cat "/proc/$_p/stat" 2>/dev/null
		done | awk '{ t += $14 + $15 } END { print t + 0 }')
		if [ "$_last" -ge 0 ] && [ $((_t - _last)) -le 2 ]; then
			_still=$((_still + 1))
			[ "$_still" -lt 2 ] || return 0
		else
			_still=0
		fi
		_last=$_t
		sleep 1
		_k=$((_k + 1))
	done
}

# mem_rss, mem_pss (all the tree's processes) and procs lines.
mem() {
	tree | while read -r _p; do
		cat "/proc/$_p/smaps_rollup" 2>/dev/null
	done | awk '$1 == "Rss:" { r += $2 } $1 == "Pss:" { s += $2 }
	    END { printf "mem_rss %.1f MB\nmem_pss %.1f MB\n", r / 1024,
	    s / 1024 }'
	tree | wc -l | awk '{ print "procs", $1, "n" }'
}

# run_strfry DIR EVENTS PROBES OUT
run_strfry() {
	_d=$1
	mkdir -p "$_d/db"
	_sp=$("$ingest" freeport)
	sed -e "s#^db = .*#db = \"$_d/db/\"#" \
	    -e "s#^    port = [0-9]*#    port = $_sp#" \
	    -e 's#nofiles = [0-9]*#nofiles = 0#' \
	    -e '/^    auth {/,/^    }/s#enabled = true#enabled = false#' \
	    "$STRFRY_CONF" >"$_d/strfry.conf"
	grep -q "port = $_sp" "$_d/strfry.conf" || {
		echo "strfry.sh: $STRFRY_CONF has no port line to change" >&2
		exit 1
	}
	(cd "$_d" && exec "$STRFRY" --config="$_d/strfry.conf" relay \
	    >"$_d/log" 2>&1) &
	pid=$!
	"$ingest" waitport 127.0.0.1 "$_sp" 20000 || {
		tail "$_d/log" >&2
		exit 1
	}
	timeout "$LOAD_S" "$ingest" publish 127.0.0.1 "$_sp" "$2" --conns 4 \
	    --inflight 50 --probes "$3" >"$4"
	settle
	mem >>"$4"
	du -sm "$_d/db" | awk '{ print "disk", $1, "MB" }' >>"$4"
	tproc_stop strfry.sh strfry "$pid" 20
	pid=""
	rm -rf "$_d"
}

# run_graspd DIR PORT EVENTS PROBES SRC OUT
run_graspd() {
	_d=$1
	# shellcheck disable=SC2086  # TPROC_NO_LIMITS is several words
	tproc_spawn "$_d" "$2" "$_d/graspd.log" $TPROC_NO_LIMITS "$graspd" -d
	pid=$!
	"$ingest" waitport 127.0.0.1 "$2" 120000 || {
		tail "$_d/graspd.log" >&2
		exit 1
	}
	settle
	timeout "$LOAD_S" "$ingest" publish 127.0.0.1 "$2" "$3" --conns 4 \
	    --inflight 50 --push "$5" --probes "$4" >"$6"
	settle
	mem >>"$6"
	du -sm "$_d/relay" | awk '{ print "disk", $1, "MB" }' >>"$6"
	tproc_stop strfry.sh graspd "$pid" 30
	pid=""
	rm -rf "$_d"
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
	owner=$(awk '$1 == "gen_owner" { print $2 }' "$tmp/gen.out")
	author=$(awk '$1 == "gen_sample_author" { print $2 }' "$tmp/gen.out")
	ids=$(awk '$1 == "gen_sample_ids" { gsub(",", "\",\"", $2); print $2 }' \
	    "$tmp/gen.out")
	cat >"$tmp/probes" <<EOF
a {"#a":["30617:$owner:bench"],"limit":100}
authors {"authors":["$author"],"limit":100}
ids {"ids":["$ids"]}
kt {"kinds":[1621],"#t":["bench"],"limit":100}
EOF
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
