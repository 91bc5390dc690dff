#!/usr/bin/env bash
# Smoke-tests the image built by `make image` without a container runtime:
# buildah mounts the image's root file system and the binary in it runs here,
# as the image's user would run it. Checks the image's metadata (non-root
# user, serve by default, the health check), `gateway version`, and a demo
# turn answered through /readyz and /v1/chat/completions on loopback.
set -euo pipefail
# buildah mount needs root, or buildah's user namespace.
if [ "$(id -u)" != 0 ] && [ -z "${_PMGATE_UNSHARED:-}" ]; then
	exec env _PMGATE_UNSHARED=1 buildah unshare "$0" "$@"
fi
image=${1:-pmgate:dev}
cfg=$(buildah inspect --type image --format '{{.Docker.Config.User}}|{{.Docker.Config.Cmd}}|{{.Docker.Config.Healthcheck.Test}}' "$image")
echo "config: $cfg"
[[ $cfg == 65532:65532\|* ]] || { echo "image user is not 65532:65532" >&2; exit 1; }
[[ $cfg == *'|[serve]|'* ]] || { echo "image does not serve by default" >&2; exit 1; }
[[ $cfg == *' ready]'* ]] || { echo "image has no /readyz health check" >&2; exit 1; }
ctr=$(buildah from --pull-never "$image")
trap 'buildah rm "$ctr" >/dev/null' EXIT
root=$(buildah mount "$ctr")
ls -l "$root/usr/local/bin/gateway" "$root/etc/ssl/certs/ca-certificates.crt"
if file "$root/usr/local/bin/gateway" 2>/dev/null | grep -q 'dynamically linked'; then
	echo "the binary is not static" >&2; exit 1
fi
bin="$root/usr/local/bin/gateway"
"$bin" version
log=$(mktemp); port_file=$(mktemp)
setpriv --reuid=65532 --regid=65532 --clear-groups "$bin" demo --port 0 --key sk-image-smoke-0123456789 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; buildah rm "$ctr" >/dev/null; rm -f "$log" "$port_file"' EXIT
for _ in $(seq 100); do grep -q 'base URL' "$log" && break; sleep 0.1; done
base=$(sed -n 's/^  base URL  //p' "$log")
[ -n "$base" ] || { cat "$log" >&2; exit 1; }
port=${base#http://127.0.0.1:}; port=${port%/v1}
"$bin" ready --url "http://127.0.0.1:$port/readyz"; echo
curl -fsS "$base/chat/completions" -H "Authorization: Bearer sk-image-smoke-0123456789" -H "Content-Type: application/json" \
	-d '{"model":"pmgate-demo","messages":[{"role":"user","content":"Hello!"}]}' | grep -q '"finish_reason":"stop"'
echo "image $image: ok, size $(buildah images --format '{{.Size}}' "$image")"
