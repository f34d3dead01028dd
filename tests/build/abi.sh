#!/bin/sh
# The ABI of the public headers only grows: every public struct (struct
# wms_* { ... }, typedef'd or not) keeps each field of abi-layout.txt at its
# offset with its type, and its size, and may only add fields past its old
# end or inside its room (a field named _reserved*, taken into use by new
# fields that lie within it) - except those in FIXED below, which
# a caller allocates (or lays out in an array) and libwms writes or reads
# whole without a version to tell their size, or that another struct
# embeds by value (an option group): their size never changes, they grow
# into their room.
# Layouts come from clang's record-layout dump (this machine's ABI: x86-64
# LP64). Not checked here: enum values, callback signatures, *_INIT macros,
# and the event-loop adapters (wms/adapters/: header only, their structs
# and code are compiled into the caller's program together, never shared
# with a built libwms; and they need their loop's headers).
#
# usage: abi.sh CLANG INCLUDE_DIR BASELINE        check
#        abi.sh CLANG INCLUDE_DIR BASELINE --update   write the baseline
#        (only with a deliberate, versioned ABI break: say so in the commit)
set -eu
clang=$1 inc=$2 baseline=$3 mode=${4:-check}
if [ "$clang" = none ]; then
	echo "1..0 # SKIP clang not found (needed for the layout dump)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
structs=$(cd "$inc" && grep -rhoE --exclude-dir=adapters '^(typedef )?struct wms_[a-z0-9_]+ \{' wms |
	sed -E 's/^(typedef )?struct //; s/ \{$//' | sort -u)
# written or read whole by libwms in memory the caller sized
FIXED="wms_error wms_submit_reply wms_status_reply wms_cancel_reply wms_stock_level
wms_breaker_snapshot wms_breaker_permit wms_http_response wms_order_line wms_address
wms_fallbacks wms_allocator wms_retry_options wms_breaker_options wms_breaker_callbacks
wms_curl_transport_options wms_wsse_options wms_client_callbacks wms_bulkhead_options
wms_bulkhead_snapshot wms_read_cache_options wms_read_cache_snapshot"
{
	for h in $(cd "$inc" && find wms -path wms/adapters -prune -o -name '*.h' -print | sort); do
		printf '#include <%s>\n' "$h"
	done
	printf 'int wms_abi_sizes[] = {\n'
	for s in $structs; do
		printf '\t(int)sizeof(struct %s),\n' "$s"
	done
	printf '};\n'
} > "$tmp/t.c"
"$clang" -std=c11 -Xclang -fdump-record-layouts -fsyntax-only -I"$inc" "$tmp/t.c" > "$tmp/dump"
# "*** Dumping" blocks: the record's own line at depth 0, its fields at
# depth 1 ("|   type name"), nested records deeper (dumped on their own too).
awk '
/^\*\*\* Dumping AST Record Layout/ { rec = ""; next }
/^ *0 \| struct wms_/ && rec == "" { rec = $4; next }
rec != "" && /\| \[sizeof=/ { sub(/.*sizeof=/, ""); sub(/,.*/, ""); print rec " size " $0; rec = ""; next }
rec != "" && /^ *[0-9:-]+ \|   [^ ]/ {
	off = $1; line = $0; sub(/^ *[0-9:-]+ \|   /, "", line)
	n = split(line, w, " "); name = w[n]; type = line; sub(" " name "$", "", type)
	gsub(/ /, "_", type)
	print rec " field " name " " off " " type
}' "$tmp/dump" | sort -u > "$tmp/now"
if [ "$mode" = --update ]; then
	{
		echo "# Public struct layouts (tests/build/abi.sh): record field|size name offset type"
		cat "$tmp/now"
	} > "$baseline"
	echo "wrote $(grep -c ' size ' "$baseline") structs to $baseline"
	exit 0
fi
grep -v '^#' "$baseline" > "$tmp/base"
python3 - "$tmp/base" "$tmp/now" "$FIXED" <<'PY'
import sys
def load(p):
    size, fields = {}, {}
    for line in open(p):
        w = line.split()
        if w[1] == 'size':
            size[w[0]] = int(w[2])
        else:
            fields.setdefault(w[0], {})[w[2]] = (w[3], w[4])
    return size, fields
bs, bf = load(sys.argv[1])
ns, nf = load(sys.argv[2])
fixed = set(sys.argv[3].split())
bad = []
for rec in sorted(fixed):
    if rec not in bs:
        bad.append('%s: named in FIXED but not in the baseline' % rec)
    elif rec in ns and ns[rec] != bs[rec]:
        bad.append('%s: size %d, was %d (caller-sized: it may not change)' % (rec, ns[rec], bs[rec]))
for rec in sorted(bs):
    if rec not in ns:
        bad.append('%s: gone' % rec)
        continue
    if ns[rec] < bs[rec]:
        bad.append('%s: size %d, was %d (it may only grow)' % (rec, ns[rec], bs[rec]))
    # the room of the old layout: each _reserved* field, up to the next field
    offs = sorted(set(int(o.split(':')[0]) for o, t in bf.get(rec, {}).values())) + [bs[rec]]
    room = [(int(o.split(':')[0]), min(x for x in offs if x > int(o.split(':')[0])))
            for n, (o, t) in bf.get(rec, {}).items() if n.startswith('_reserved')]
    def in_room(off):
        b = int(off.split(':')[0])
        return any(lo <= b < hi for lo, hi in room)
    for name, (off, typ) in sorted(bf.get(rec, {}).items(), key=lambda x: x[1][0]):
        got = nf.get(rec, {}).get(name)
        if got == (off, typ):
            continue
        if name.startswith('_reserved') and (got is None or in_room(got[0])):
            continue  # room taken into use, or shrunk
        bad.append('%s.%s: %s at %s, was %s at %s' % (rec, name, got[1] if got else 'gone',
                   got[0] if got else '-', typ, off))
    for name, (off, typ) in nf.get(rec, {}).items():
        if name not in bf.get(rec, {}) and int(off.split(':')[0]) < bs[rec] and not in_room(off):
            bad.append('%s.%s: new at %s, inside the old struct (%d bytes)' % (rec, name, off, bs[rec]))
for b in bad:
    print('ABI: ' + b)
print('%d structs checked, %d new since the baseline, %d problems' %
      (len(bs), len(set(ns) - set(bs)), len(bad)))
sys.exit(1 if bad else 0)
PY
