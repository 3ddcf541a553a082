#!/bin/sh
# tests/interop/run.sh: the Node.js interop test of relayd (nostr-tools and
# ws, pinned in package-lock.json).  Installs node_modules with `npm ci`
# when missing, starts relayd with start_relay.sh, signs a few events with
# graspd's C code for the test to verify (when the ingest tool is built),
# runs `node --test relay_interop.mjs negentropy.mjs auth_interop.mjs
# archive_interop.mjs` (TAP output; the second is NIP-77, the third NIP-42
# and NIP-70, the fourth starts a graspd in GRASP-05 archive mode from
# GRASPD_BIN, default bin/, bootstrapped from the relayd), stops relayd
# and exits with node's status.  Fails at
# once, with the reason, when relayd or node is missing.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/lib/tproc_shell.sh
. "$top/tests/lib/tproc_shell.sh"
tproc_dirs

for c in node npm; do
	if ! command -v "$c" >/dev/null 2>&1; then
		echo "interop: $c is not installed (sh scripts/deps.sh --test)" >&2
		exit 1
	fi
done
if [ ! -d "$here/node_modules/nostr-tools" ] ||
    [ ! -d "$here/node_modules/ws" ]; then
	if ! (cd "$here" && npm ci --no-audit --no-fund --loglevel=error \
	    >/dev/null); then
		echo "interop: npm ci failed in $here" >&2
		exit 1
	fi
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/graspd-interop.XXXXXX") || exit 1
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	sh "$here/start_relay.sh" stop "$tmp"
	tproc_rmtmp interop "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! url=$(sh "$here/start_relay.sh" start "$tmp"); then
	echo "interop: relayd could not be started" >&2
	exit 1
fi

if [ -x "$ingest" ] && "$ingest" gen 20 "$tmp/c_events.jsonl" \
    --domain "${url#ws://}" >/dev/null; then
	C_EVENT_FILE=$tmp/c_events.jsonl
	export C_EVENT_FILE
else
	echo "# interop: $ingest not built, C-signed events not checked"
fi

GRASPD_BIN=${GRASPD_BIN:-${BIN:-bin}}
case $GRASPD_BIN in /*) ;; *) GRASPD_BIN=$top/$GRASPD_BIN ;; esac
export GRASPD_BIN

cd "$here" || exit 1
RELAY_URL=$url timeout -k 5 180 node --test --test-reporter=tap \
    relay_interop.mjs negentropy.mjs auth_interop.mjs archive_interop.mjs
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "# interop: node exited with $rc; last lines of the relayd log:"
	tail -n 20 "$tmp/relayd.log" 2>/dev/null | sed 's/^/# /'
fi
exit "$rc"
