#!/bin/sh
# The slow-WMS demo (./run demo --scenario slow-wms) end to end, with its
# short script, through wms-demo (which runs wms-demo-slow). It must pass
# its ledger check (every order in the WMS exactly once with the reference
# held, or known not sent and not in the WMS: exit 0, "demo OK"), and its
# story must have happened: the bulkhead refused calls, the breaker opened
# on slow calls (nothing failed: every reply was a success, only late),
# refused calls at once, and closed again; the process never had a thread
# besides the loop's and wms-sim's. The script is timed so that none of
# this hangs on the machine's speed (examples/demo_slow.c).
#
# Under `meson test --setup=valgrind` (WMS_UNDER_VALGRIND=1) valgrind
# makes every call slower than the breaker's 800 ms: wms-demo-slow runs
# under valgrind of its own at 20 orders/s, and only its ledger and exit
# code are checked.
#
# usage: demo_slow.sh WMS_DEMO WMS_DEMO_SLOW
set -u
demo=$1 slow=$2
out=$(mktemp "${TMPDIR:-/tmp}/demo-slow.XXXXXX") || exit 1
failed=0

fail() {
	echo "FAIL: $1"
	failed=1
}

# has EXTENDED_REGEX WHAT
has() {
	grep -Eq -- "$1" "$out" || fail "$2: no line matches /$1/"
}

if [ "${WMS_UNDER_VALGRIND:-0}" = 1 ] && command -v valgrind >/dev/null 2>&1; then
	supp=
	[ -n "${WMS_SOURCE_ROOT:-}" ] && supp="--suppressions=$WMS_SOURCE_ROOT/tests/valgrind.supp"
	valgrind -q --error-exitcode=99 --leak-check=full --fair-sched=yes \
		--show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
		$supp "$slow" --short --rate 20 >"$out" 2>&1
	rc=$?
else
	"$demo" --scenario slow-wms --short >"$out" 2>&1
	rc=$?
fi
cat "$out"
[ "$rc" -eq 0 ] || fail "exit $rc, expected 0"
has '^demo OK$' "the demo's verdict"
has '^ledger: [0-9]+ orders: [0-9]+ confirmed .*: nothing lost, nothing doubled$' "the ledger"
has '^ +[0-9]+\.[0-9][0-9]s +[0-9]+ ms +[0-9]+ +([0-9]+|-) +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+  [A-Z_]+ +[0-9]+ = 1 \+ [0-9]+ sim$' \
	"a timeline line"
has '^  threads: .* 1 runs every call \(this one\), .* none other ' "threads: the loop and the sim's only"
if grep -q ' + [0-9]* other$' "$out"; then fail "a thread neither the loop's nor the sim's"; fi
if [ "${WMS_UNDER_VALGRIND:-0}" != 1 ]; then
	has '^  breaker: +CLOSED -> OPEN -> .*-> CLOSED$' "the breaker opened, then closed again"
	has '>>> breaker CLOSED -> OPEN \(slow-call rate at or above threshold\)$' \
		"opened by the slow-call rule"
	has '^  statuses: +OK [0-9]+, BULKHEAD_FULL [1-9][0-9]*, CIRCUIT_OPEN [1-9][0-9]*, ' \
		"calls refused by the bulkhead and by the breaker"
	has '^  in flight: +at most 50 \(the bulkhead' "the bulkhead's cap reached"
fi
rm -f "$out"
[ "$failed" -eq 0 ] && echo "demo_slow: OK"
exit "$failed"
