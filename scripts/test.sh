#!/bin/sh
# Installs what is missing (Debian packages, and the npm packages of the
# interop test), builds everything and runs the whole test suite.  The last
# line of output is "N passed, N failed".
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/deps.sh --test
make -j2 all tests
exec make test
