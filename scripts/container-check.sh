#!/usr/bin/env bash
# Runs the container commands of docs/INSTALL.md as written: every ```sh container block, with podman,
# against the image `make image` built, in a directory holding a my.env copied from
# examples/gateway.env.example with only its placeholders filled in (as CONNECT.md has the owner do).
# As in `make test-snippets`, the documented 127.0.0.1:8788 becomes a free port. Each block runs in the
# background; the check passes when /readyz and /v1/models (with the key of my.env) answer through the
# published port, and then stops the container.
#
# What this script adapts is the machine, never the command: when it runs as root in a container (CI),
# crun cannot raise resource limits without CAP_SYS_RESOURCE and refuses a hybrid cgroup layout, so the
# blocks run with a containers.conf that asks for lower limits and no cgroups, in a mount namespace
# without the cgroup2 hierarchy.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
command -v podman >/dev/null || { echo "container-check: podman not found (Debian: apt-get install podman crun)" >&2; exit 1; }

blocks=$(awk '/^```sh container$/ {on = 1; n++; next} /^```/ {on = 0} on {print n "\t" $0}' docs/INSTALL.md)
[ -n "$blocks" ] || { echo "container-check: no \`\`\`sh container block in docs/INSTALL.md" >&2; exit 1; }

work=$(mktemp -d)
pgid=""
cleanup() {
	if [ -n "$pgid" ]; then kill -TERM -- "-$pgid" 2>/dev/null || true; wait 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

key="sk-container-check-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
sed -e "s/^PROVIDER_API_KEY=replace-with-a-long-random-key$/PROVIDER_API_KEY=$key/" \
	-e 's/^POSTMAN_SESSION_COOKIE=replace-with-the-postman.sid-value$/POSTMAN_SESSION_COOKIE=container-check-sid-0123456789/' \
	-e 's/^POSTMAN_WORKSPACE_SUBDOMAIN=your-team$/POSTMAN_WORKSPACE_SUBDOMAIN=acme/' \
	-e 's/^POSTMAN_WORKSPACE_ID=replace-with-your-team-id$/POSTMAN_WORKSPACE_ID=00000000-0000-4000-8000-000000000000/' \
	examples/gateway.env.example >"$work/my.env"
chmod 600 "$work/my.env"
if grep -v '^#' "$work/my.env" | grep -q 'replace-with-\|=your-team$'; then
	echo "container-check: a placeholder of examples/gateway.env.example was not filled in; update this script" >&2
	exit 1
fi
model=$(sed -n 's/^PROVIDER_MODELS=\([^,]*\).*/\1/p' "$work/my.env")

wrap=()
if [ "$(id -u)" = 0 ]; then
	caps=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
	if [ $(((0x${caps:-0} >> 24) & 1)) = 0 ]; then # no CAP_SYS_RESOURCE
		printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\ncgroups = "disabled"\n[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' >"$work/containers.conf"
		export CONTAINERS_CONF="$work/containers.conf"
	fi
	if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = tmpfs ] && [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
		wrap=(unshare -m sh -c 'umount /sys/fs/cgroup/unified && exec "$@"' sh)
	fi
fi

free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
	done
	echo "container-check: no free port" >&2; exit 1
}

for n in $(cut -f1 <<<"$blocks" | sort -un); do
	block=$(awk -F'\t' -v n="$n" '$1 == n {sub(/^[^\t]*\t/, ""); print}' <<<"$blocks")
	port=$(free_port)
	echo "== docs/INSTALL.md container block $n, 127.0.0.1:8788 -> 127.0.0.1:$port:"
	echo "$block"
	log="$work/block$n.log"
	(cd "$work" && exec setsid "${wrap[@]}" bash -euo pipefail -c "${block//127.0.0.1:8788/127.0.0.1:$port}") >"$log" 2>&1 &
	pgid=$!
	ok=""
	for _ in $(seq 120); do
		if curl -fsS -m 2 "http://localhost:$port/readyz" >"$work/ready" 2>/dev/null; then ok=1; break; fi
		kill -0 "$pgid" 2>/dev/null || break
		sleep 0.5
	done
	if [ -z "$ok" ]; then
		echo "container-check: block $n: http://localhost:$port/readyz never answered through the published port" >&2
		grep -v 'healthcheck' "$log" >&2 || true
		exit 1
	fi
	echo "readyz: $(cat "$work/ready")"
	models=$(curl -fsS -m 5 "http://localhost:$port/v1/models" -H "Authorization: Bearer $key")
	grep -q "\"id\":\"$model\"" <<<"$models" || { echo "container-check: /v1/models has no $model: $models" >&2; exit 1; }
	echo "models: $models"
	kill -TERM -- "-$pgid" 2>/dev/null || true
	wait "$pgid" 2>/dev/null || true
	pgid=""
	echo "== block $n: ok"
done
echo "container-check: $(cut -f1 <<<"$blocks" | sort -un | wc -l) block(s) of docs/INSTALL.md ran as written with $(podman --version)"
