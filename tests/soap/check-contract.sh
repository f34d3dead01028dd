#!/bin/sh
# The WSDL/XSD contract checks (meson suite "contract"):
#   1. xmllint: both files are well-formed;
#   2. xmllint --schema: the schema compiles, accepts every sample under
#      tests/data/soap/contract/valid/ and rejects every one under invalid/;
#   3. the WSDL names the five operations with the contract's soapActions,
#      in both bindings, each with the WmsFault fault;
#   4. gSOAP: wsdl2h reads the WSDL (and the imported schema) without an
#      error or an unexpected warning, and soapcpp2 compiles what it wrote.
# Usage: check-contract.sh <source root>. Exit 0 pass, 1 fail, 77 skip
# (only when xmllint or wsdl2h is not installed).
set -u

root=${1:-${WMS_SOURCE_ROOT:-}}
if [ -z "$root" ]; then
	echo "usage: $0 <source root>" >&2
	exit 2
fi
wsdl=$root/wsdl/warehouse.wsdl
xsd=$root/wsdl/warehouse.xsd
samples=$root/tests/data/soap/contract

for tool in xmllint wsdl2h; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool is not installed"
		exec /bin/sh -c 'exit 77'
	fi
done

failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}
pass() {
	echo "ok: $*"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wms-contract.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# 1. well-formed
for f in "$wsdl" "$xsd"; do
	if xmllint --noout --nonet "$f" >"$tmp/lint.log" 2>&1; then
		pass "well-formed: ${f#"$root"/}"
	else
		fail "not well-formed: ${f#"$root"/}"
		cat "$tmp/lint.log"
	fi
done

# 2. the schema compiles and judges the samples
nvalid=0
for f in "$samples"/valid/*.xml; do
	[ -e "$f" ] || continue
	nvalid=$((nvalid + 1))
	if xmllint --noout --nonet --schema "$xsd" "$f" >"$tmp/schema.log" 2>&1; then
		pass "schema accepts ${f#"$root"/}"
	else
		fail "schema rejects ${f#"$root"/}"
		cat "$tmp/schema.log"
	fi
done
ninvalid=0
for f in "$samples"/invalid/*.xml; do
	[ -e "$f" ] || continue
	ninvalid=$((ninvalid + 1))
	xmllint --noout --nonet --schema "$xsd" "$f" >"$tmp/schema.log" 2>&1
	rc=$?
	# 3: fails to validate; anything else (1-2, 4-5: parse or schema error) is wrong
	if [ "$rc" -eq 3 ]; then
		pass "schema rejects ${f#"$root"/}"
	else
		fail "schema did not reject ${f#"$root"/} (xmllint exit $rc)"
		cat "$tmp/schema.log"
	fi
done
[ "$nvalid" -ge 8 ] || fail "expected at least 8 valid samples, found $nvalid"
[ "$ninvalid" -ge 3 ] || fail "expected at least 3 invalid samples, found $ninvalid"

# 3. operations, actions and faults
count() {
	xmllint --nonet --xpath "$1" "$wsdl" 2>/dev/null
}
for op in SubmitOrder GetOrderStatus CancelOrder GetStockLevel GetShipmentStatus; do
	n=$(count "count(/*[local-name()='definitions']/*[local-name()='binding']/*[local-name()='operation'][@name='$op']/*[local-name()='operation'][@soapAction='urn:libwms:warehouse:1/$op'])")
	if [ "$n" = 2 ]; then
		pass "$op: soapAction in both bindings"
	else
		fail "$op: soapAction urn:libwms:warehouse:1/$op in $n bindings, expected 2"
	fi
	n=$(count "count(/*[local-name()='definitions']/*[local-name()='portType']/*[local-name()='operation'][@name='$op']/*[local-name()='fault'][@message='wh:WmsFault'])")
	[ "$n" = 1 ] || fail "$op: no WmsFault fault in the portType"
done
n=$(count "count(/*[local-name()='definitions']/*[local-name()='service']/*[local-name()='port'])")
[ "$n" = 2 ] || fail "expected 2 service ports, found $n"

# 4. gSOAP
cp "$wsdl" "$xsd" "$tmp"/
if (cd "$tmp" && wsdl2h -c -Nwh -o warehouse.h warehouse.wsdl) >"$tmp/wsdl2h.log" 2>&1; then
	# wsdl2h reports dangling references as warnings and still exits 0:
	# any warning but its note about type inheritance in C is a failure.
	if grep -i -E "error|warning" "$tmp/wsdl2h.log" |
		grep -v -E "ignoring type inheritance by default for C" >"$tmp/warnings.log"; then
		fail "wsdl2h warnings:"
		cat "$tmp/warnings.log"
	else
		pass "wsdl2h read the WSDL and the schema"
	fi
	for op in SubmitOrder GetOrderStatus CancelOrder GetStockLevel GetShipmentStatus; do
		grep -q "urn:libwms:warehouse:1/$op" "$tmp/warehouse.h" ||
			fail "wsdl2h output lacks the $op action"
	done
	if command -v soapcpp2 >/dev/null 2>&1; then
		imp=
		for d in /usr/share/gsoap/import /usr/local/share/gsoap/import; do
			[ -d "$d" ] && imp="-I$d"
		done
		if (cd "$tmp" && soapcpp2 -c -x -L $imp warehouse.h) >"$tmp/soapcpp2.log" 2>&1; then
			pass "soapcpp2 compiled the generated header"
		else
			fail "soapcpp2 rejected the generated header:"
			cat "$tmp/soapcpp2.log"
		fi
	else
		echo "note: soapcpp2 not installed, generated header not compiled"
	fi
else
	fail "wsdl2h failed:"
	cat "$tmp/wsdl2h.log"
fi

# Leave through exec: under `meson test --setup=valgrind` this shell itself
# runs in valgrind, which would otherwise judge the shell's own leaks at exit.
if [ "$failures" -ne 0 ]; then
	echo "$failures contract check(s) failed"
	exec /bin/sh -c 'exit 1'
fi
echo "all contract checks passed"
exec /bin/sh -c 'exit 0'
