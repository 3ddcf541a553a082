#!/bin/sh
# tests/interop/run.sh: the Node.js interop tests of relayd, each with
# real client libraries pinned in package-lock.json: nostr-tools and ws,
# @rust-nostr/nostr-sdk (with fake-indexeddb for its database), NDK with
# @nostr-dev-kit/sync, and applesauce-relay.  Installs node_modules with
# install.sh (`npm ci` when a package of package.json is missing or at
# another version), starts relayd with start_relay.sh, signs a few events with
# graspd's C code for the test to verify (when the ingest tool is built),
# runs `node --test` on relay_interop.mjs, negentropy.mjs (NIP-77),
# auth_interop.mjs (NIP-42 and NIP-70), archive_interop.mjs (a graspd in
# GRASP-05 archive mode from GRASPD_BIN, default bin/, bootstrapped from
# the relayd), sdk_interop.mjs, ndk_interop.mjs, applesauce_interop.mjs,
# web_interop.mjs (the web front in headless Chromium, over a relayd of
# its own from GRASPD_BIN) and audit/*.test.mjs (the port of the
# reference's conformance suite, grasp-audit; each file starts a whole
# graspd of its own from GRASPD_BIN) (TAP output), stops relayd and exits
# with node's status.  Fails at once, with the reason, when relayd, node
# (20.19 or later, package.json's engines) or a package is missing.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/lib/tproc_shell.sh
. "$top/tests/lib/tproc_shell.sh"
tproc_dirs

sh "$here/install.sh" || exit 1

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
# nostr-sdk's WebAssembly leaves timers of a minute behind after its
# clients shut down: --test-force-exit ends each file when its tests have.
RELAY_URL=$url timeout -k 5 300 node --test --test-force-exit \
    --test-reporter=tap relay_interop.mjs negentropy.mjs auth_interop.mjs \
    archive_interop.mjs sdk_interop.mjs ndk_interop.mjs applesauce_interop.mjs \
    web_interop.mjs audit/*.test.mjs
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "# interop: node exited with $rc; last lines of the relayd log:"
	tail -n 20 "$tmp/relayd.log" 2>/dev/null | sed 's/^/# /'
fi
exit "$rc"
