#!/bin/sh
# netns.sh CMD [ARG...] runs CMD in a new network namespace whose only
# interface is loopback (brought up), so nothing it starts can reach another
# host: a connection to anything but loopback fails at once ("network is
# unreachable"). As root it uses unshare --net; otherwise it also maps the
# user to root in a new user namespace (needs unprivileged user namespaces).
# Needs unshare (util-linux) and ip (iproute2).
set -eu
if [ "$#" -eq 0 ]; then
	echo "usage: scripts/netns.sh CMD [ARG...]" >&2
	exit 2
fi
inner='ip link set lo up && exec "$@"'
if [ "$(id -u)" -eq 0 ]; then
	exec unshare --net sh -c "$inner" netns "$@"
fi
exec unshare --net --map-root-user sh -c "$inner" netns "$@"
