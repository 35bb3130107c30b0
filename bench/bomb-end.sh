#!/bin/sh
# Measures how long contain takes to end a fork bomb once its timeout
# fires, in each Linux mode, and what outlives it. The bomb is perl, each
# process forking as fast as it can (LOAD=spin, the default: every fork
# fails once the cap is reached, and the processes spin in fork, taking
# every CPU) or every 20 ms once a place is free and ignoring SIGTERM
# (LOAD=refill: the tree refills whatever is killed). A cgroup-v1 pids
# group caps it at CAP tasks (default 1000), whatever contain does, and
# the bench ends what is left after each round (pids.max 0 first, so that
# nothing refills). A contain that has not ended 60 s after its start is
# killed by the bench (exit 137 after a "took" of 60 s or more).
#
#   root      as root, with contain's cgroup (freeze, cgroup.kill)
#   tracking  as root with CONTAIN_DISABLE=cgroup (the shim, scans)
#   nobody    as nobody (the shim, scans)
#
# Usage: bench/bomb-end.sh [ROUNDS]   (default 3)
# Environment: CONTAIN (the binary; else built into a temporary directory),
# MODES, LOAD, CAP. Needs root, perl and the v1 pids hierarchy
# (/sys/fs/cgroup/pids, a hybrid layout).
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-3}
modes=${MODES:-root tracking nobody}
load=${LOAD:-spin}
cap=${CAP:-1000}
V1=/sys/fs/cgroup/pids
[ "$(id -u)" = 0 ] || { echo "bomb-end: needs root" >&2; exit 2; }
[ -d "$V1" ] || { echo "bomb-end: no cgroup-v1 pids hierarchy at $V1" >&2; exit 2; }
command -v perl >/dev/null || { echo "bomb-end: needs perl" >&2; exit 2; }
work=$(mktemp -d /tmp/bomb-end.XXXXXX)
chmod 755 "$work"
bin=${CONTAIN:-}
if [ -z "$bin" ]; then
	bin=$work/contain
	go build -o "$bin" .
fi
cg=$V1/bomb-end-$$
empty() {
	[ -d "$cg" ] || return 0
	echo 0 >"$cg/pids.max"
	for _ in $(seq 1 50); do
		pids=$(cat "$cg/cgroup.procs")
		[ -z "$pids" ] && break
		kill -9 $pids 2>/dev/null || true
		sleep 0.2
	done
	rmdir "$cg"
}
trap 'empty; rm -rf "$work"' EXIT INT TERM
case $load in
spin) perl='while (1) { fork }' ;;
refill) perl='$SIG{TERM} = "IGNORE"; while (1) { fork; select(undef, undef, undef, 0.02) }' ;;
*) echo "bomb-end: LOAD is spin or refill" >&2; exit 2 ;;
esac
echo "contain run -t 1 -k 1 on a perl bomb ($load) capped at $cap tasks; took = from contain's start to its end"
for mode in $modes; do
	i=0
	while [ $i -lt "$rounds" ]; do
		i=$((i + 1))
		mkdir "$cg"
		echo "$cap" >"$cg/pids.max"
		chown nobody "$cg/cgroup.procs" "$cg/tasks"
		cmd="echo \$\$ > $cg/cgroup.procs && exec perl -e '$perl'"
		s=$(date +%s%N)
		set +e
		case $mode in
		root) timeout -s KILL 60 "$bin" run -t 1 -k 1 -- sh -c "$cmd" 2>/dev/null ;;
		tracking) CONTAIN_DISABLE=cgroup timeout -s KILL 60 "$bin" run -t 1 -k 1 -- sh -c "$cmd" 2>/dev/null ;;
		nobody) timeout -s KILL 60 setpriv --reuid=nobody --regid=nogroup --clear-groups "$bin" run -t 1 -k 1 -- sh -c "$cmd" 2>/dev/null ;;
		esac
		code=$?
		set -e
		e=$(date +%s%N)
		live=0
		for p in $(cat "$cg/cgroup.procs"); do
			st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1) || continue
			[ -n "$st" ] && [ "$st" != Z ] && live=$((live + 1))
		done
		printf '%-9s round %d: exit %d, took %d ms, %d processes alive after it\n' "$mode" "$i" "$code" $(((e - s) / 1000000)) "$live"
		empty
	done
done
