#!/bin/sh
# wms-demo --endpoint URL with a user and password in the URL: the demo
# prints the WMS it talks to, and the user and password stay out of its
# output ("WMS: http://***@host/..."). Nothing listens on 127.0.0.1:1, so
# every call fails at once (the ledger check then fails: the exit status
# is not checked, only the output).
#
# usage: demo_endpoint.sh WMS_DEMO
set -u
demo=$1
# (No `trap`: under `meson test --setup=valgrind` this shell runs under
# valgrind, and dash keeps a trap's text where valgrind counts it lost.)
out=$(mktemp "${TMPDIR:-/tmp}/demo-endpoint.XXXXXX") || exit 1
timeout 120 "$demo" --endpoint 'http://alice:s3cr3t@127.0.0.1:1/wms' --tick-ms 20 --ticks 30 \
	>"$out" 2>&1
failed=0
if ! grep -Fqx 'WMS: http://***@127.0.0.1:1/wms' "$out"; then
	echo "FAIL: no line 'WMS: http://***@127.0.0.1:1/wms' in:"
	cat "$out"
	failed=1
elif grep -Eq 's3cr3t|alice' "$out"; then
	echo "FAIL: the user or password is in the output:"
	grep -E 's3cr3t|alice' "$out"
	failed=1
else
	echo "ok: the endpoint is printed without its user and password"
fi
rm -f "$out"
exit "$failed"
