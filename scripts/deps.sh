#!/bin/sh
# Installs the Debian packages graspd needs to build, run and test, and only
# those that are missing; with --test also the interop tests' npm packages
# (tests/interop/install.sh: npm ci from package-lock.json when one is
# missing).  Called by both README commands; safe to re-run.
set -eu

PKGS="build-essential pkg-config libevent-dev libsqlite3-dev sqlite3
libsecp256k1-dev libcjson-dev libwebsockets-dev libnanomsg-dev libssl-dev
zlib1g-dev libcmark-dev git"

if [ "${1:-}" = "--test" ]; then
	PKGS="$PKGS mandoc shellcheck clang clang-format lintian"
	# The browser case of tests/integration/web_test.c; fonts for its
	# screenshots.
	PKGS="$PKGS chromium fonts-dejavu-core"
	# tests/integration/proxy_test.c: nginx (with its stream module for
	# the PROXY protocol) in front of relayd, a certificate from openssl.
	PKGS="$PKGS nginx libnginx-mod-stream openssl"
	# Node.js may come from Debian (nodejs + npm) or from another packaging
	# that bundles npm; ask for Debian's only when the commands are absent.
	command -v node >/dev/null 2>&1 || PKGS="$PKGS nodejs"
	command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
fi
# make bench only: wrk loads NIP-11 over HTTP (tests/bench/run.sh); nginx,
# fcgiwrap and curl serve and probe git beside graspd (tests/bench/git.sh).
if [ "${1:-}" = "--bench" ]; then
	PKGS="$PKGS wrk nginx fcgiwrap curl"
fi

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing="$missing $p"
	fi
done

if [ -n "$missing" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: missing packages:$missing (run as root to install)" >&2
		exit 1
	fi
	echo "deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing
fi

# The interop tests' clients (nostr-tools, nostr-sdk, NDK, applesauce...)
# from npm.  A failure here (no registry, a Node.js older than the
# packages need) is the interop group's alone: it fails with the same
# reason, and the other groups still run.
if [ "${1:-}" = "--test" ]; then
	top=$(cd "$(dirname "$0")/.." && pwd)
	sh "$top/tests/interop/install.sh" ||
	    echo "deps: the interop tests' npm packages are not installed" >&2
fi
