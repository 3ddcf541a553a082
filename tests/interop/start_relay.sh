#!/bin/sh
# tests/interop/start_relay.sh: start or stop a relayd for the interop test.
#
#   start_relay.sh start DIR	starts relayd on a free loopback port with
#				its data, run directory and log in DIR,
#				waits (10 s at most) until it listens, and
#				prints its ws:// URL
#   start_relay.sh stop DIR	SIGTERM, 5 s, then SIGKILL
#
# The program is $GRASPD_BIN/relayd, or bin/relayd in the checkout.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/lib/tproc_shell.sh
. "$top/tests/lib/tproc_shell.sh"
bin=${GRASPD_BIN:-${BIN:-bin}}
case $bin in /*) ;; *) bin=$top/$bin ;; esac
relayd=$bin/relayd

usage() {
	echo "usage: start_relay.sh start|stop DIR" >&2
	exit 2
}

[ $# -eq 2 ] || usage
dir=$2

# A loopback TCP port nobody listened on a moment ago.
free_port() {
	node -e '
const s = require("net").createServer();
s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# Exit status 0 once 127.0.0.1:$1 accepts a connection.
probe() {
	node -e '
const c = require("net").connect(+process.argv[1], "127.0.0.1");
c.on("connect", () => process.exit(0));
c.on("error", () => process.exit(1));
setTimeout(() => process.exit(1), 500);' "$1"
}

start() {
	if [ ! -x "$relayd" ]; then
		echo "start_relay: $relayd not found; build it with make" >&2
		exit 1
	fi
	port=$(free_port) || exit 1
	domain=127.0.0.1:$port
	# shellcheck disable=SC2086  # TPROC_NO_LIMITS is a list
	tproc_spawn "$dir" "$port" "$dir/relayd.log" NGIT_TEST=1 \
	    "$TPROC_WAL_ROOM" $TPROC_NO_LIMITS "$relayd" || exit 1
	echo $! >"$dir/relayd.pid"
	n=0
	while [ "$n" -lt 100 ]; do
		if ! kill -0 "$(cat "$dir/relayd.pid")" 2>/dev/null; then
			echo "start_relay: relayd exited at start:" >&2
			tail -n 20 "$dir/relayd.log" | sed 's/^/# /' >&2
			exit 1
		fi
		if probe "$port"; then
			echo "ws://$domain"
			exit 0
		fi
		sleep 0.1
		n=$((n + 1))
	done
	echo "start_relay: relayd not listening on $domain after 10 s" >&2
	tail -n 20 "$dir/relayd.log" | sed 's/^/# /' >&2
	stop
	exit 1
}

stop() {
	[ -f "$dir/relayd.pid" ] || return 0
	pid=$(cat "$dir/relayd.pid")
	rm -f "$dir/relayd.pid"
	tproc_stop start_relay relayd "$pid" 5
}

case $1 in
start)	start ;;
stop)	stop ;;
*)	usage ;;
esac
