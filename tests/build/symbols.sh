#!/bin/sh
# The shared library exports wms_* symbols only, and no wms__ internals;
# and every symbol of abi-symbols.txt still (the ABI only grows: a new one
# is added to that list with the change that adds it).
# usage: symbols.sh LIBWMS_SO [BASELINE]
set -eu
export LC_ALL=C
so=$1 baseline=${2:-}
syms=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | sort)
bad=$(printf '%s\n' "$syms" | grep -v '^wms_' | grep -v '^_init$' | grep -v '^_fini$' || true)
internal=$(printf '%s\n' "$syms" | grep '^wms__' || true)
count=$(printf '%s\n' "$syms" | grep -c '^wms_' || true)
if [ -n "$bad" ] || [ -n "$internal" ]; then
	echo "unexpected exported symbols:"; printf '%s\n' $bad $internal
	exit 1
fi
[ "$count" -ge 20 ] || { echo "only $count wms_ symbols exported: visibility broken?"; exit 1; }
if [ -n "$baseline" ]; then
	gone=$(printf '%s\n' "$syms" | comm -13 - "$baseline")
	new=$(printf '%s\n' "$syms" | grep '^wms_' | comm -23 - "$baseline")
	if [ -n "$gone" ]; then
		echo "symbols of $baseline no longer exported:"; printf '%s\n' $gone
		exit 1
	fi
	if [ -n "$new" ]; then
		echo "exported but not in $baseline (add them with the change):"; printf '%s\n' $new
		exit 1
	fi
fi
echo "$count symbols exported, all wms_-prefixed"
