#!/usr/bin/env bash
# Checks examples/pmgate.service with systemd-analyze verify (Debian's systemd
# package), against a copy whose ExecStart names the freshly built binary (the
# unit's own path, /usr/local/bin/gateway, need not exist on this machine).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v systemd-analyze >/dev/null || { echo "systemd-analyze not found: apt-get install systemd" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/gateway" ./cmd/gateway
sed "s|/usr/local/bin/gateway|$dir/gateway|g" examples/pmgate.service > "$dir/pmgate.service"
out=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify "$dir/pmgate.service" 2>&1) || { echo "$out" >&2; exit 1; }
# verify exits 0 on some warnings; any line about the unit is a failure here.
if grep -F "pmgate.service" <<<"$out" >&2; then exit 1; fi
echo "examples/pmgate.service verifies"
