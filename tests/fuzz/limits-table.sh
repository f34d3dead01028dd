#!/bin/sh
# tests/fuzz/limits.tsv names, for each limit, the one source line that
# enforces it (limit-coverage.sh counts that line's branch). Checked here
# without a coverage build, so that moving code cannot leave the table
# pointing at nothing: each row's file exists and holds its pattern on
# exactly one line, and its condition (if any) on that line.
# usage: limits-table.sh ROOT
set -eu
exec python3 - "$1" <<'PY'
import os, sys
root = sys.argv[1]
table = os.path.join(root, 'tests/fuzz/limits.tsv')
bad = rows = 0
for line in open(table):
    if not line.strip() or line.startswith('#'):
        continue
    cols = line.rstrip('\n').split('\t')
    if len(cols) != 8:
        print('not ok - 8 tab-separated columns expected: ' + line.strip()); bad += 1; continue
    lid, bound, hs, path, pattern, cond, crossed, what = cols
    if path == '-':
        continue
    rows += 1
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        print('not ok - %s: %s does not exist' % (lid, path)); bad += 1; continue
    src = open(full).read().split('\n')
    at = [i for i, l in enumerate(src) if pattern in l]
    if len(at) != 1:
        print('not ok - %s: "%s" is on %d lines of %s' % (lid, pattern, len(at), path)); bad += 1
        continue
    if cond != '-' and cond not in src[at[0]]:
        print('not ok - %s: "%s" not on %s:%d' % (lid, cond, path, at[0] + 1)); bad += 1
        continue
    if crossed not in ('T', 'F'):
        print('not ok - %s: crossed must be T or F' % lid); bad += 1
print('%d rows with a source line checked, %d problems' % (rows, bad))
sys.exit(1 if bad else 0)
PY
