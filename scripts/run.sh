#!/bin/sh
# Installs what is missing, builds, and runs graspd on loopback with the
# default configuration and its data under ./data in the checkout.
# Stop it with Ctrl-C.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/deps.sh
make -j2
: "${NGIT_BIND_ADDRESS:=127.0.0.1:7334}"
: "${NGIT_RELAY_DATA_PATH:=$top/data/relay}"
: "${NGIT_GIT_DATA_PATH:=$top/data/git}"
: "${NGIT_RUN_PATH:=$top/data/run}"
export NGIT_BIND_ADDRESS NGIT_RELAY_DATA_PATH NGIT_GIT_DATA_PATH NGIT_RUN_PATH
mkdir -p "$NGIT_RELAY_DATA_PATH" "$NGIT_GIT_DATA_PATH" "$NGIT_RUN_PATH"
echo "graspd: relay at ws://$NGIT_BIND_ADDRESS, data in $top/data"
exec bin/graspd -d
