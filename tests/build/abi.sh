#!/bin/sh
# The ABI of the public headers only grows: every struct a caller or a
# plugin lays out (typedef struct wms_* { ... }) keeps each field of
# abi-layout.txt at its offset with its type, and its size, and may only
# add fields past its old end (or in a field named reserved*). Layouts come
# from clang's record-layout dump (this machine's ABI: x86-64 LP64).
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
structs=$(cd "$inc" && grep -rhoE 'typedef struct wms_[a-z0-9_]+ \{' wms | awk '{print $3}' | sort -u)
{
	for h in $(cd "$inc" && find wms -name '*.h' | sort); do
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
python3 - "$tmp/base" "$tmp/now" <<'PY'
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
bad = []
for rec in sorted(bs):
    if rec not in ns:
        bad.append('%s: gone' % rec)
        continue
    if ns[rec] < bs[rec]:
        bad.append('%s: size %d, was %d (it may only grow)' % (rec, ns[rec], bs[rec]))
    now_by_off = {}
    for name, (off, typ) in nf.get(rec, {}).items():
        now_by_off.setdefault(off, []).append((name, typ))
    for name, (off, typ) in sorted(bf.get(rec, {}).items(), key=lambda x: x[1][0]):
        got = nf.get(rec, {}).get(name)
        if got == (off, typ):
            continue
        if name.startswith('reserved') and off in now_by_off:
            continue  # a reserved field taken into use
        bad.append('%s.%s: %s at %s, was %s at %s' % (rec, name, got[1] if got else 'gone',
                   got[0] if got else '-', typ, off))
    for name, (off, typ) in nf.get(rec, {}).items():
        if name not in bf.get(rec, {}) and int(off.split(':')[0]) < bs[rec] and \
           not any(n.startswith('reserved') and o == off for n, (o, t) in bf.get(rec, {}).items()):
            bad.append('%s.%s: new at %s, inside the old struct (%d bytes)' % (rec, name, off, bs[rec]))
for b in bad:
    print('ABI: ' + b)
print('%d structs checked, %d new since the baseline, %d problems' %
      (len(bs), len(set(ns) - set(bs)), len(bad)))
sys.exit(1 if bad else 0)
PY
