#!/bin/sh
# tests/interop/install.sh: installs the interop tests' npm packages, as
# package-lock.json pins them, into tests/interop/node_modules with
# `npm ci`, unless every dependency of package.json is already there at
# its version.  Run by scripts/deps.sh --test and by run.sh.  Exits 1,
# with the reason, when node or npm is missing, Node.js is older than
# 20.19 (package.json's engines; run.sh's --test-force-exit needs 20.14)
# or npm ci fails.
set -u

here=$(cd "$(dirname "$0")" && pwd)

for c in node npm; do
	if ! command -v "$c" >/dev/null 2>&1; then
		echo "interop: $c is not installed (sh scripts/deps.sh --test)" >&2
		exit 1
	fi
done
if ! node -e '
const [a, b] = process.versions.node.split(".").map(Number);
process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1);'; then
	echo "interop: Node.js $(node --version) is older than 20.19" >&2
	exit 1
fi

# Exit status 0 when every dependency of package.json is installed at the
# version it pins.
installed() {
	# shellcheck disable=SC2016  # a JavaScript template literal
	(cd "$here" && node -e '
const fs = require("fs");
const deps = JSON.parse(fs.readFileSync("package.json")).dependencies;
for (const [name, want] of Object.entries(deps)) {
	let got = null;
	try {
		got = JSON.parse(fs.readFileSync(
		    `node_modules/${name}/package.json`)).version;
	} catch {}
	if (got !== want) process.exit(1);
}')
}

installed && exit 0
if ! (cd "$here" && npm ci --no-audit --no-fund --loglevel=error \
    >/dev/null); then
	echo "interop: npm ci failed in $here" >&2
	exit 1
fi
if ! installed; then
	echo "interop: npm ci left a package of package.json missing" >&2
	exit 1
fi
