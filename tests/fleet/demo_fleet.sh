#!/bin/sh
# The fleet demo from a build, at both ends of --replicas (2 and 8, the
# bound MAXREP), fast ticks. Each run must pass its ledger checks, and the
# shared breaker must let fewer requests reach the WMS during the outage
# than a breaker per process. Past either end (1, 9) it is refused with
# its usage before anything (redis-server, the simulator) is started.
set -eu
demo=$1
for n in 1 9; do
	if out=$("$demo" --replicas "$n" 2>&1); then
		echo "--replicas $n accepted"; exit 1
	fi
	printf '%s\n' "$out" | grep -q '^usage: wms-demo-fleet' || { printf '%s\n' "$out"; exit 1; }
	if printf '%s\n' "$out" | grep -q 'Redis:'; then echo "--replicas $n started something"; exit 1; fi
done
for n in 2 8; do
	out=$("$demo" --replicas "$n" --tick-ms 60) || { printf '%s\n' "$out"; exit 1; }
	printf '%s\n' "$out"
	printf '%s\n' "$out" | grep -q '^fleet demo OK$'
	[ "$(printf '%s\n' "$out" | grep -c '^  replica [0-9]*: calls')" -eq $((2 * n)) ] ||
		{ echo "not $n replicas in each phase"; exit 1; }
	per=$(printf '%s\n' "$out" | sed -n 's/^  a breaker per process *\([0-9]*\)$/\1/p')
	one=$(printf '%s\n' "$out" | sed -n 's/^  one breaker for the fleet (Redis) *\([0-9]*\)$/\1/p')
	[ -n "$per" ] && [ -n "$one" ] || { echo "no outage figures"; exit 1; }
	[ "$one" -lt "$per" ] || { echo "$n replicas: shared $one not below per-process $per"; exit 1; }
	echo "$n replicas, outage requests: per process $per, shared $one"
done
