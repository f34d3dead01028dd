#!/bin/sh
# The fleet demo from a build: 2 replicas, fast ticks. It must pass its
# ledger checks, and the shared breaker must let fewer requests reach the
# WMS during the outage than a breaker per process.
set -eu
out=$("$1" --replicas 2 --tick-ms 60) || { printf '%s\n' "$out"; exit 1; }
printf '%s\n' "$out"
printf '%s\n' "$out" | grep -q '^fleet demo OK$'
per=$(printf '%s\n' "$out" | sed -n 's/^  a breaker per process *\([0-9]*\)$/\1/p')
one=$(printf '%s\n' "$out" | sed -n 's/^  one breaker for the fleet (Redis) *\([0-9]*\)$/\1/p')
[ -n "$per" ] && [ -n "$one" ] || { echo "no outage figures"; exit 1; }
[ "$one" -lt "$per" ] || { echo "shared $one not below per-process $per"; exit 1; }
echo "outage requests: per process $per, shared $one"
