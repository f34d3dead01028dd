#!/bin/sh
# abi.sh itself: against the real baseline, headers edited the ways the ABI
# may change (room taken into use, a versioned struct grown at its end)
# pass, and the ways it may not (a field inserted, a type changed, a
# caller-sized struct or an option group grown) fail.
# usage: abi-selftest.sh CLANG ABI_SH INCLUDE_DIR BASELINE
set -eu
clang=$1 abi=$2 inc=$3 baseline=$4
if [ "$clang" = none ]; then
	echo "1..0 # SKIP clang not found"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
# case WANT FILE PERL-EXPRESSION: apply the edit to a copy, run abi.sh
case_() {
	want=$1 file=$2 expr=$3 name=$4
	n=$((n + 1))
	rm -rf "$tmp/inc" && cp -r "$inc" "$tmp/inc"
	perl -0pi -e "$expr" "$tmp/inc/wms/$file"
	if cmp -s "$inc/wms/$file" "$tmp/inc/wms/$file" && [ "$name" != unchanged ]; then
		echo "not ok $n - $name: the edit did not apply"; bad=$((bad + 1)); return
	fi
	if sh "$abi" "$clang" "$tmp/inc" "$baseline" > "$tmp/out" 2>&1; then got=pass; else got=fail; fi
	if [ "$got" = "$want" ]; then
		echo "ok $n - $name: $want"
	else
		echo "not ok $n - $name: $got, want $want"; sed 's/^/# /' "$tmp/out"; bad=$((bad + 1))
	fi
}
case_ pass errors.h 's/x/x/' unchanged
case_ pass errors.h 's/uint64_t _reserved\[8\];/uint64_t later;\n\tuint64_t _reserved[7];/' \
	"wms_error: a field takes the first slot of its room"
case_ pass breaker.h 's/void \*_reserved\[7\];/void *a;\n\tvoid *b;\n\tvoid *_reserved[5];/' \
	"wms_breaker_options: two fields take the room, the second inside it"
case_ pass client.h 's/(\twms_client_callbacks callbacks;\n)/$1\tint later;\n/' \
	"wms_client_options (versioned): a field added at the end"
case_ fail errors.h 's/(\tuint64_t _reserved\[8\];\n)/$1\tint later;\n/' \
	"wms_error (caller-sized): a field past the room"
case_ fail client.h 's/(\tconst char \*endpoint;\n)/$1\tint inserted;\n/' \
	"wms_client_options: a field inserted in the middle"
case_ fail errors.h 's/\tlong http_status;/\tint http_status;/' \
	"wms_error: a field's type changed"
case_ fail client.h 's/uint32_t _reserved\[6\];/uint64_t _reserved[4];/' \
	"wms_retry_options (an option group): room grown"
case_ fail sys/transport.h 's/\tconst char \*correlation_id;\n//' \
	"wms_http_request: a field removed"
echo "1..$n"
[ "$bad" -eq 0 ]
