# shellcheck shell=sh
# tests/lib/tproc_shell.sh: shell functions shared by the benchmarks
# (tests/bench/run.sh, pull.sh) and the interop test (tests/interop/run.sh,
# start_relay.sh): the build directories, starting a graspd program on a
# loopback port in a directory of its own, stopping it, failing with the
# last lines of the logs and removing the temporary directory.  Sourced
# (`. "$top/tests/lib/tproc_shell.sh"`) after the script has set top, the
# checkout's root; it defines functions and one variable, runs nothing.
# Every function works under `set -eu`.

# The client limits switched off, for load that comes from one address;
# word-split into tproc_spawn's environment.
# shellcheck disable=SC2034  # used by the scripts that source this
TPROC_NO_LIMITS="NGIT_MAX_EVENTS_PER_MINUTE=0 NGIT_MAX_CONNECTIONS_PER_IP=0 \
NGIT_MAX_EVENTS_PER_MINUTE_PER_IP=0"
# A test relay's WAL room: one fill step (relayproc.h's TPROC_WAL_ROOM).
# shellcheck disable=SC2034  # used by the scripts that source this
TPROC_WAL_ROOM="NGIT_WAL_ROOM_MB=4"

# tproc_dirs: O (default build) and BIN (default bin) made absolute,
# relative to $top, and the programs the scripts run from them: ingest
# (the benchmark client), relayd and graspd.
# shellcheck disable=SC2154  # top is the sourcing script's
tproc_dirs() {
	O=${O:-build}
	BIN=${BIN:-bin}
	case $O in /*) ;; *) O=$top/$O ;; esac
	case $BIN in /*) ;; *) BIN=$top/$BIN ;; esac
	ingest=$O/tests/bench/ingest
	relayd=$BIN/relayd
	graspd=$BIN/graspd
}

# tproc_require PREFIX FILE...: exits 1, saying so, unless every FILE is
# an executable.
tproc_require() {
	_who=$1
	shift
	for _f; do
		if [ ! -x "$_f" ]; then
			echo "$_who: $_f is missing; build first: make all tests" >&2
			exit 1
		fi
	done
}

# tproc_spawn DIR PORT LOG [NAME=VALUE...] PROGRAM [ARG...]: runs PROGRAM in
# the background in DIR with its store, git data and run directory below
# DIR, bound to and named 127.0.0.1:PORT, the environment's assignments
# added last (they win), stdout and stderr appended to LOG.  $! is its
# process id.
tproc_spawn() {
	_d=$1
	_port=$2
	_log=$3
	shift 3
	mkdir -p "$_d/relay" "$_d/git" "$_d/run" || return 1
	(
		cd "$_d" || exit 1
		exec env NGIT_BIND_ADDRESS="127.0.0.1:$_port" \
		    NGIT_DOMAIN="127.0.0.1:$_port" \
		    NGIT_RELAY_DATA_PATH="$_d/relay" \
		    NGIT_GIT_DATA_PATH="$_d/git" NGIT_RUN_PATH="$_d/run" \
		    "$@" >>"$_log" 2>&1
	) &
}

# tproc_stop PREFIX WHAT PID SECONDS: SIGTERM to PID, then SIGKILL (said on
# stderr) when it still runs after SECONDS; reaps it when it is a child of
# this shell.  Returns 0.
tproc_stop() {
	kill -TERM "$3" 2>/dev/null || true
	_n=0
	while kill -0 "$3" 2>/dev/null && [ "$_n" -lt $(($4 * 10)) ]; do
		sleep 0.1
		_n=$((_n + 1))
	done
	if kill -0 "$3" 2>/dev/null; then
		echo "$1: $2 ignored SIGTERM for $4 s, killing it" >&2
		kill -KILL "$3" 2>/dev/null || true
	fi
	wait "$3" 2>/dev/null || true
}

# tproc_fail PREFIX MESSAGE [LOG...]: says MESSAGE and the last 20 lines
# of each LOG that exists on stderr, and exits 1.
tproc_fail() {
	_who=$1
	echo "$_who: $2" >&2
	shift 2
	for _l; do
		[ -f "$_l" ] || continue
		echo "$_who: last lines of $_l:" >&2
		tail -n 20 "$_l" | sed 's/^/# /' >&2
	done
	exit 1
}

# tproc_rmtmp PREFIX DIR: removes DIR, or says it is kept when
# GRASPD_KEEP_TMP is set.
tproc_rmtmp() {
	if [ -n "${GRASPD_KEEP_TMP:-}" ]; then
		echo "$1: kept $2" >&2
	else
		rm -rf "$2"
	fi
}

# tproc_tree PID: PID and its children, one a line (a graspd and its roles).
tproc_tree() {
	echo "$1"
	cat "/proc/$1/task/"*/children 2>/dev/null | tr ' ' '\n' |
	    grep -v '^$' || true
}

# tproc_settle PID PROCS SECONDS: waits until PID's tree has PROCS
# processes (0: any number) that together used at most 2 clock ticks (20
# ms) of CPU a second for two seconds in a row; 1 if that took longer
# than SECONDS.
tproc_settle() {
	_last=-1
	_still=0
	_k=0
	while [ "$_k" -lt "$3" ]; do
		_cpu=$(tproc_tree "$1" | while read -r _p; do
			cat "/proc/$_p/stat" 2>/dev/null
		done | awk '{ t += $14 + $15; n++ } END { print n + 0 " " t + 0 }')
		_procs=${_cpu% *}
		_ticks=${_cpu#* }
		if { [ "$2" -eq 0 ] || [ "$_procs" -eq "$2" ]; } &&
		    [ "$_last" -ge 0 ] && [ $((_ticks - _last)) -le 2 ]; then
			_still=$((_still + 1))
			[ "$_still" -lt 2 ] || return 0
		else
			_still=0
		fi
		_last=$_ticks
		sleep 1
		_k=$((_k + 1))
	done
	return 1
}

# tproc_probes GEN_OUT FILE: the four REQ probes of the ingest benchmarks
# (#a, authors, ids, kinds+#t) into FILE, from what `ingest gen` printed
# (GEN_OUT): ingest's --probes takes them in turn, one every 5 ms.
tproc_probes() {
	_owner=$(awk '$1 == "gen_owner" { print $2 }' "$1")
	_author=$(awk '$1 == "gen_sample_author" { print $2 }' "$1")
	_ids=$(awk '$1 == "gen_sample_ids" { gsub(",", "\",\"", $2)
	    print $2 }' "$1")
	cat >"$2" <<EOF
a {"#a":["30617:$_owner:bench"],"limit":100}
authors {"authors":["$_author"],"limit":100}
ids {"ids":["$_ids"]}
kt {"kinds":[1621],"#t":["bench"],"limit":100}
EOF
}
