#!/usr/bin/env bash
# The probe's offline check (run by .ci/run): `gateway probe --emulator` in both
# strategies (again with --measure-pending, the emulated service dropping and then
# keeping the pending call: each report must say which), `gateway verify` on its
# reports, then `gateway verify` on every
# seeded bad report of cmd/gateway/testdata/probe/bad, each of which must fail
# with exactly the branch its file name starts with ("text-phase--…" → "text phase").
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# No VCS stamp: the seeded reports carry no commit, and neither does this binary.
go build -buildvcs=false -o "$dir/gateway" ./cmd/gateway
gw="$dir/gateway"

echo "-- probe --emulator (both strategies, with --measure-limits, --measure-query-unit and --measure-parallel)"
"$gw" probe --emulator --measure-limits --measure-query-unit --measure-parallel --out "$dir/probe.json" 2>"$dir/probe.log" || { cat "$dir/probe.log"; exit 1; }
for s in web_session access_token; do
	"$gw" verify "$dir/probe.$s.json"
done
"$gw" verify --env-file cmd/gateway/testdata/probe/web_session.env "$dir/probe.web_session.json"

# --measure-pending runs in a probe of its own (it needs the gateway's query limit as set);
# the emulated service drops, then keeps, the pending call, and each report must say so.
for p in drop keep; do
	echo "-- probe --emulator --measure-pending --accept-pending $p (both strategies)"
	"$gw" probe --emulator --measure-pending --accept-pending "$p" --out "$dir/pending-$p.json" >"$dir/pending-$p.out" 2>"$dir/pending-$p.log" ||
		{ cat "$dir/pending-$p.out" "$dir/pending-$p.log"; exit 1; }
	want=dropped
	[ "$p" = keep ] && want=kept
	for s in web_session access_token; do
		"$gw" verify "$dir/pending-$p.$s.json"
		if ! grep -q "^\s*\"result\": \"$want\"," <(sed -n '/"pending": {/,$p' "$dir/pending-$p.$s.json"); then
			echo "pending-$p.$s.json does not say $want:"; cat "$dir/pending-$p.out"; exit 1
		fi
	done
	grep -c "a pending tool call after a newer user query in its conversation: $want\$" "$dir/pending-$p.out" | grep -qx 2 ||
		{ echo "the verdict lines do not say $want twice:"; cat "$dir/pending-$p.out"; exit 1; }
done

echo "-- verify on the seeded reports"
seeded=(--env-file cmd/gateway/testdata/probe/web_session.env --now 2026-12-01T10:00:00Z --require-observed-model)
"$gw" verify "${seeded[@]}" cmd/gateway/testdata/probe/good.json
n=0
for f in cmd/gateway/testdata/probe/bad/*.json; do
	name=$(basename "$f" .json)
	branch=${name%%--*}
	branch=${branch//-/ }
	if out=$("$gw" verify "${seeded[@]}" "$f" 2>&1); then
		echo "seeded bad report $f passed verify"; exit 1
	fi
	if ! grep -q "^FAIL $branch: " <<<"$out"; then
		echo "$f did not fail with its branch ($branch):"; echo "$out"; exit 1
	fi
	if grep '^FAIL ' <<<"$out" | grep -v "^FAIL $branch: " | grep -q .; then
		echo "$f failed other branches too:"; echo "$out"; exit 1
	fi
	n=$((n + 1))
done
echo "all $n seeded bad reports rejected, each with its branch"
