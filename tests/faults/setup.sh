#!/usr/bin/env bash
# What the fault-injection suite needs beyond the integration tests' tools, installed once and
# cached: faketime (a sidecar started with its clock off) and toxiproxy-server (network faults
# between a sidecar and its broker), built from its Go module at a pinned version (the module's
# server command is cmd/server; `go install` names the binary after the directory, so it is
# renamed to toxiproxy-server).
# Idempotent: a second run finds both and does nothing. Prints the toxiproxy-server path last.
set -euo pipefail

TOXIPROXY_VERSION="${TOXIPROXY_VERSION:-v2.12.0}"
CACHE="${KADMIT_CACHE:-$HOME/.cache/kadmit}/tools/toxiproxy-${TOXIPROXY_VERSION}"

need_apt=()
command -v faketime >/dev/null 2>&1 || need_apt+=(faketime)
command -v go >/dev/null 2>&1 || [ -x "$CACHE/toxiproxy-server" ] || need_apt+=(golang-go)
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: need ${need_apt[*]} (run as root, or install them)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${need_apt[@]}" >/dev/null 2>&1 || {
    apt-get update -q >/dev/null
    apt-get install -y -q "${need_apt[@]}" >/dev/null
  }
fi

if [ ! -x "$CACHE/toxiproxy-server" ]; then
  mkdir -p "$CACHE"
  GOBIN="$CACHE" GOFLAGS=-buildvcs=false \
    go install "github.com/Shopify/toxiproxy/v2/cmd/server@${TOXIPROXY_VERSION}" >&2
  mv "$CACHE/server" "$CACHE/toxiproxy-server"
fi
command -v faketime >/dev/null
echo "$CACHE/toxiproxy-server"
