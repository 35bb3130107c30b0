#!/bin/sh
# Measures how far past --pids a tree gets before contain's sampled process
# limit ends it, in each Linux mode where contain samples the limit:
#
#   root      as root, with contain's cgroup (no pids controller in it: a
#             hybrid layout, or none delegated), cgroup.procs sampled
#   tracking  as root with CONTAIN_DISABLE=cgroup: scans of every process
#   nobody    as nobody: no cgroup, scans
#
# against two loads: a fork loop (`while :; do sleep 30 & done`) and a real
# fork bomb (`f(){ f & f & }; f`). The truth is not contain's word: each
# run's tree is put in a cgroup-v1 pids group of its own whose pids.peak
# counts every task it ever held at once (zombies included), and whose
# pids.max (SAFETY, 1000) keeps a bomb that contain failed to end from
# taking the machine: an overshoot of SAFETY-LIMIT means the cap, not
# contain, stopped the tree. Needs root and the v1 pids hierarchy (/sys/fs/cgroup/pids).
#
# Usage: bench/pids-overshoot.sh [ROUNDS [LIMIT]]   (defaults 11 and 20)
# Environment: CONTAIN (the binary; else built into a temporary directory),
# MODES and LOADS (subsets, space-separated: "root tracking nobody",
# "loop bomb").
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-11}
limit=${2:-20}
modes=${MODES:-root tracking nobody}
loads=${LOADS:-loop bomb}
SAFETY=1000
V1=/sys/fs/cgroup/pids
[ "$(id -u)" = 0 ] || { echo "pids-overshoot: needs root (a cgroup-v1 pids group measures the truth)" >&2; exit 2; }
[ -d "$V1" ] || { echo "pids-overshoot: no cgroup-v1 pids hierarchy at $V1" >&2; exit 2; }
work=$(mktemp -d /tmp/pids-overshoot.XXXXXX)
chmod 755 "$work"
mkdir "$work/out" && chown nobody "$work/out" # the report, which nobody writes too
bin=${CONTAIN:-}
if [ -z "$bin" ]; then
	bin=$work/contain
	go build -o "$bin" .
fi
chmod 755 "$bin"
cg=$V1/pids-overshoot-$$
mkdir "$cg"
# Everything left in the group is killed, and the group removed, at the end.
cleanup() {
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		pids=$(cat "$cg/cgroup.procs" 2>/dev/null) || break
		[ -z "$pids" ] && break
		kill -9 $pids 2>/dev/null || true
		sleep 0.2
	done
	rmdir "$cg" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM
echo "$SAFETY" >"$cg/pids.max"
chown nobody "$cg/cgroup.procs" "$cg/tasks"
loop='while :; do sleep 30 & done'
bomb='f(){ f & f & }; f'

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "contain --pids $limit, $rounds rounds each; overshoot = the tree's peak (cgroup-v1 pids.peak) - $limit"
printf '%-9s %-5s %8s %8s %8s  %s\n' mode load median min max "contain's peak (median), exits"
for mode in $modes; do
	for load in $loads; do
		eval "body=\$$load"
		over= said= codes=
		i=0
		while [ $i -lt "$rounds" ]; do
			i=$((i + 1))
			# A fresh group each round: pids.peak only grows.
			rmdir "$cg" 2>/dev/null || { echo "pids-overshoot: $cg still holds processes" >&2; exit 1; }
			mkdir "$cg"
			echo "$SAFETY" >"$cg/pids.max"
			chown nobody "$cg/cgroup.procs" "$cg/tasks"
			rep=$work/out/report.json
			rm -f "$rep"
			# The command moves itself into the group, then runs the load.
			cmd="echo \$\$ > $cg/cgroup.procs && exec sh -c '$body'"
			set +e
			case $mode in
			root) timeout -s KILL 60 "$bin" run --report "$rep" --pids "$limit" -t 20 -- sh -c "$cmd" 2>/dev/null ;;
			tracking) CONTAIN_DISABLE=cgroup timeout -s KILL 60 "$bin" run --report "$rep" --pids "$limit" -t 20 -- sh -c "$cmd" 2>/dev/null ;;
			nobody) timeout -s KILL 60 setpriv --reuid=nobody --regid=nogroup --clear-groups "$bin" run --report "$rep" --pids "$limit" -t 20 -- sh -c "$cmd" 2>/dev/null ;;
			esac
			code=$?
			set -e
			peak=$(cat "$cg/pids.peak")
			left=$(wc -l <"$cg/cgroup.procs")
			[ "$left" = 0 ] || echo "pids-overshoot: $mode $load round $i: $left processes outlived contain" >&2
			over="$over $((peak - limit))"
			said="$said $(tr -d ' \n' <"$rep" 2>/dev/null | sed -n 's/.*"pids":{[^}]*"peak":\([0-9]*\).*/\1/p')"
			codes="$codes $code"
			for _ in 1 2 3 4 5 6 7 8 9 10; do
				[ -z "$(cat "$cg/cgroup.procs")" ] && break
				kill -9 $(cat "$cg/cgroup.procs") 2>/dev/null || true
				sleep 0.2
			done
		done
		# A bomb that reached pids.max ($SAFETY) was stopped by it, not by contain.
		printf '%-9s %-5s %8s %8s %8s  %s;%s\n' "$mode" "$load" \
			"$(echo $over | tr ' ' '\n' | median)" \
			"$(echo $over | tr ' ' '\n' | sort -n | head -1)" \
			"$(echo $over | tr ' ' '\n' | sort -n | tail -1)" \
			"$(echo $said | tr ' ' '\n' | median)" "$(echo $codes | tr ' ' '\n' | sort | uniq -c | awk '{printf " %s x%s", $2, $1}')"
		[ -n "${VERBOSE:-}" ] && echo "  overshoots:$over" && echo "  contain's peaks:$said"
	done
done
