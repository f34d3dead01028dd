#!/bin/sh
# The shared library exports wms_* symbols only, and no wms__ internals.
# usage: symbols.sh LIBWMS_SO
set -eu
so=$1
syms=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | sort)
bad=$(printf '%s\n' "$syms" | grep -v '^wms_' | grep -v '^_init$' | grep -v '^_fini$' || true)
internal=$(printf '%s\n' "$syms" | grep '^wms__' || true)
count=$(printf '%s\n' "$syms" | grep -c '^wms_' || true)
if [ -n "$bad" ] || [ -n "$internal" ]; then
	echo "unexpected exported symbols:"; printf '%s\n' $bad $internal
	exit 1
fi
[ "$count" -ge 20 ] || { echo "only $count wms_ symbols exported: visibility broken?"; exit 1; }
echo "$count symbols exported, all wms_-prefixed"
