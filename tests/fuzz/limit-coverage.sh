#!/usr/bin/env bash
# tests/fuzz/limit-coverage.sh [HARNESS...]
#
# Shows which of the library's limits the fuzz inputs cross, and which they
# do not. Builds the replay harnesses (fuzz-replay-<name>) with clang's
# source-based coverage in its own build dir, replays through each one its
# built-in seeds (heavy ones too), the seed files (every variant), regress/
# and the fuzzers' corpus (<fuzz build>/fuzz-work/<name>/corpus), then
# prints, for each limit in tests/fuzz/limits.tsv, how many times the branch
# that enforces it went the way that crosses the bound and the other way:
#
#   attrs  256  src/soap/limits.c:150  crossed 1 204 / not crossed 9 411 022  [reply 903 / ...]
#
# and, for the config harness, each numeric key's range: refused below it,
# accepted at its low and high bound, refused above it (from the harness's
# FUZZ_VERBOSE notes). A limit not crossed both ways is marked MISSING and
# the script exits 1; so it does when any input replayed fails its
# invariants.
#
# Environment:
#   FUZZ_COV_BUILD_DIR  the coverage build (default: <repo>/build-cov-limits)
#   FUZZ_BUILD_DIR      where run-fuzz.sh keeps its corpus (default: <repo>/build-fuzz)
#   FUZZ_NICE           nice level (default 10)
#   FUZZ_COV_NO_CORPUS=1  seeds and regress/ only
#   FUZZ_ALLOW_*        as for run-fuzz.sh; default 0 (no finding is open)
#   LLVM_PROFDATA, LLVM_COV  the tools (default: llvm-profdata, llvm-cov, or -14)
set -euo pipefail

main() {
	FUZZ_DIR=$(cd "$(dirname "$0")" && pwd -L)
	ROOT=$(cd "$FUZZ_DIR/../.." && pwd -L)
	BUILD=${FUZZ_COV_BUILD_DIR:-$ROOT/build-cov-limits}
	FUZZ_BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
	NICE=${FUZZ_NICE:-10}
	# ALL, seeds_for
	# shellcheck source=tests/fuzz/harnesses.sh
	. "$FUZZ_DIR/harnesses.sh"

	HARNESSES=("$@")
	[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=("${ALL[@]}")
	for h in "${HARNESSES[@]}"; do
		[[ " ${ALL[*]} " == *" $h "* ]] || { echo "unknown harness: $h" >&2; exit 2; }
	done

	tool() {
		local t
		for t in "$@"; do
			command -v "$t" >/dev/null && { echo "$t"; return; }
		done
		echo "limit-coverage: none of $* is installed (Debian: llvm)" >&2
		exit 2
	}
	command -v clang >/dev/null || { echo "limit-coverage: clang is not installed" >&2; exit 2; }
	PROFDATA=${LLVM_PROFDATA:-$(tool llvm-profdata llvm-profdata-14)}
	COV=${LLVM_COV:-$(tool llvm-cov llvm-cov-14)}
	command -v python3 >/dev/null || { echo "limit-coverage: python3 is needed" >&2; exit 2; }

	# The FUZZ_ALLOW_* variables looked past findings while they were open
	# (README.md); all are fixed, so nothing is looked past unless set.
	export FUZZ_ALLOW_NAMES_HISTORY=${FUZZ_ALLOW_NAMES_HISTORY:-0}
	export FUZZ_ALLOW_SLOW_SCAN=${FUZZ_ALLOW_SLOW_SCAN:-0}
	export FUZZ_ALLOW_SLOW_DECODE=${FUZZ_ALLOW_SLOW_DECODE:-0}
	export FUZZ_ALLOW_SLOW_COMMENT=${FUZZ_ALLOW_SLOW_COMMENT:-0}
	FAILED_INPUTS=0
	WORK=$BUILD/limit-coverage
	# Profiles of anything instrumented that runs during set-up go nowhere.
	export LLVM_PROFILE_FILE=/dev/null
	if [ ! -f "$BUILD/build.ninja" ]; then
		echo "limit-coverage: configuring $BUILD (clang, -fprofile-instr-generate -fcoverage-mapping)" >&2
		CC=clang nice -n "$NICE" meson setup "$BUILD" "$ROOT" -Dfuzz=disabled \
			-Dc_args="-fprofile-instr-generate -fcoverage-mapping" \
			-Dc_link_args="-fprofile-instr-generate" >/dev/null
	fi
	targets=()
	for h in "${HARNESSES[@]}"; do
		targets+=("tests/fuzz/fuzz-replay-$h")
	done
	nice -n "$NICE" ninja -C "$BUILD" "${targets[@]}" >/dev/null
	rm -rf "$WORK"
	mkdir -p "$WORK"

	# replay NAME WHAT ARGS...: one replay run into NAME's profile pool; a
	# failing one (an input that breaks an invariant) is rerun one file at a
	# time so that every other input still counts, the failures listed.
	replay() {
		local h=$1 what=$2 bin=$BUILD/tests/fuzz/fuzz-replay-$1 f n=0
		shift 2
		if LLVM_PROFILE_FILE="$WORK/$h-%4m.profraw" FUZZ_VERBOSE=$VERBOSE \
			nice -n "$NICE" "$bin" "$@" >>"$WORK/$h.out" 2>>"$WORK/$h.notes"; then
			return
		fi
		echo "limit-coverage: $h: $what: an input fails its invariants; replaying file by file" >&2
		FAILED_INPUTS=$((FAILED_INPUTS + 1))
		if [ "$1" != "--raw" ]; then
			echo "limit-coverage: $h: $what failed (see $WORK/$h.notes)" >&2
			return
		fi
		shift
		while IFS= read -r -d '' f; do
			if ! LLVM_PROFILE_FILE="$WORK/$h-%4m.profraw" FUZZ_VERBOSE=$VERBOSE \
				nice -n "$NICE" "$bin" --raw "$f" >>"$WORK/$h.out" 2>>"$WORK/$h.notes"; then
				echo "  fails: $f" >&2
				n=$((n + 1))
			fi
		done < <(find "$@" -type f ! -name '.*' -print0 2>/dev/null | sort -z)
		echo "limit-coverage: $h: $n input(s) of $what fail" >&2
	}

	for h in "${HARNESSES[@]}"; do
		local seeds=() present=() corpus=$FUZZ_BUILD/fuzz-work/$h/corpus
		VERBOSE=0
		[ "$h" = config ] && VERBOSE=1 # its notes count the numeric bounds
		read -r -a seeds <<<"$(seeds_for "$h")"
		for s in "${seeds[@]}"; do [ -e "$s" ] && present+=("$s"); done
		: >"$WORK/$h.out"
		: >"$WORK/$h.notes"
		replay "$h" "the built-in seeds" --builtin --heavy
		replay "$h" "the seed files" --seeds "${present[@]}"
		replay "$h" "regress/" --raw "$FUZZ_DIR/regress/$h"
		if [ "${FUZZ_COV_NO_CORPUS:-0}" != 1 ] && [ -d "$corpus" ]; then
			echo "limit-coverage: $h: replaying $(find "$corpus" -type f | wc -l) corpus inputs" >&2
			replay "$h" "the corpus" --raw "$corpus"
		fi
		"$PROFDATA" merge -sparse -o "$WORK/$h.profdata" "$WORK/$h"-*.profraw
		"$COV" export -format=text -instr-profile="$WORK/$h.profdata" \
			"$BUILD/tests/fuzz/fuzz-replay-$h" >"$WORK/$h.json"
	done

	local covered=0
	python3 - "$ROOT" "$FUZZ_DIR/limits.tsv" "$WORK" "${HARNESSES[@]}" <<'PY' || covered=$?
import json, os, re, sys

root, table, work, harnesses = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]

# Branch counts per harness: {(file, line, col): (true, false)}
branches = {}
for h in harnesses:
    with open(os.path.join(work, h + '.json')) as f:
        data = json.load(f)
    b = {}
    for fobj in data['data'][0]['files']:
        name = os.path.relpath(os.path.normpath(fobj['filename']), root)
        for br in fobj.get('branches', []):
            key = (name, br[0], br[1])
            t, fa = b.get(key, (0, 0))
            b[key] = (t + br[4], fa + br[5])
    branches[h] = b

def fmt(n):
    return '{:,}'.format(n).replace(',', ' ')

missing = 0
rows = []
for line in open(table):
    if not line.strip() or line.startswith('#'):
        continue
    cols = line.rstrip('\n').split('\t')
    if len(cols) != 8:
        sys.exit('limits.tsv: 8 tab-separated columns expected: ' + line)
    lid, bound, hs, path, pattern, cond, crossed, what = cols
    if path == '-':
        rows.append((lid, bound, '-', 'not crossable', what))
        continue
    want = [h for h in hs.split(',') if h in harnesses]
    if not want:
        continue  # none of its harnesses replayed
    src = open(os.path.join(root, path)).read().split('\n')
    at = [i for i, l in enumerate(src) if pattern in l]
    if len(at) != 1:
        sys.exit('limits.tsv: %s: "%s" is on %d lines of %s' % (lid, pattern, len(at), path))
    n = at[0] + 1
    text = src[at[0]]
    col = None
    if cond != '-':
        c = text.find(cond)
        if c < 0:
            sys.exit('limits.tsv: %s: "%s" not on %s:%d' % (lid, cond, path, n))
        col = c + 1  # llvm-cov's columns count bytes, from 1
    tot_x = tot_n = 0
    per = []
    for h in want:
        on_line = {k: v for k, v in branches[h].items() if k[0] == path and k[1] == n}
        if col is not None:
            on_line = {k: v for k, v in on_line.items() if k[2] == col}
        if len(on_line) != 1:
            if not on_line:
                per.append('%s: no branch' % h)
                continue
            sys.exit('limits.tsv: %s: %d branches on %s:%d (name one with a condition)' %
                     (lid, len(on_line), path, n))
        t, f = list(on_line.values())[0]
        x, nx = (t, f) if crossed == 'T' else (f, t)
        tot_x += x
        tot_n += nx
        per.append('%s %s/%s' % (h, fmt(x), fmt(nx)))
    ok = tot_x > 0 and tot_n > 0
    if not ok:
        missing += 1
    rows.append((lid, bound, '%s:%d' % (path, n),
                 'crossed %s / not crossed %s' % (fmt(tot_x), fmt(tot_n)),
                 '[' + ', '.join(per) + ']' + ('' if ok else '  MISSING')))

w = [max(len(r[i]) for r in rows) for i in range(3)]
w3 = max(len(r[3]) for r in rows if r[2] != '-')
for r in rows:
    print('%-*s  %-*s  %-*s  %-*s  %s' % (w[0], r[0], w[1], r[1], w[2], r[2], w3, r[3], r[4]))

# The config harness's numeric keys: refused below, accepted at lo and hi,
# refused above (its FUZZ_VERBOSE notes and failure messages).
if 'config' in harnesses:
    keys = {}
    notes = open(os.path.join(work, 'config.notes'), errors='replace').read().split('\n')
    acc = re.compile(r': bound (\S+): accepted at (lo|hi)$')
    bad = re.compile(r': CONFIG fuzz\.yaml:\d+: (\S+): must be (\d+)\.\.(\d+) \(got (-?\d+)\)$')
    for l in notes:
        m = acc.search(l)
        if m:
            keys.setdefault(m.group(1), [0, 0, 0, 0])[1 if m.group(2) == 'lo' else 2] += 1
            continue
        m = bad.search(l)
        if m:
            k, lo, hi, v = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
            keys.setdefault(k, [0, 0, 0, 0])[0 if v < lo else 3] += 1
    src = open(os.path.join(root, 'src/config.c')).read()
    print('\nconfig, each numeric key (refused below / accepted at lo / accepted at hi / refused above):')
    for m in re.finditer(r'\{ K\w+, B_(\w+), "(\w+)", T_(UINT|PERCENT), (\d+), (\d+),', src):
        block = {'CLIENT': 'client', 'BREAKER': 'circuit_breaker',
                 'RETRY': 'circuit_breaker.retry'}[m.group(1)]
        k = block + '.' + m.group(2)
        c = keys.get(k, [0, 0, 0, 0])
        lo = int(m.group(4))
        # jitter's lower bound, 0, is the default: not told apart
        need = [0, 1, 2, 3] if lo > 0 else [0, 2, 3]
        ok = all(c[i] > 0 for i in need)
        if not ok:
            missing += 1
        print('  %-48s %s..%s  %s / %s / %s / %s%s' % (
            k, m.group(4), m.group(5), fmt(c[0]), fmt(c[1]) if lo > 0 else '(0: default)',
            fmt(c[2]), fmt(c[3]), '' if ok else '  MISSING'))

print('\n%d limit(s) not crossed both ways' % missing)
sys.exit(1 if missing else 0)
PY
	if [ "$FAILED_INPUTS" -gt 0 ]; then
		echo "limit-coverage: $FAILED_INPUTS replay(s) had inputs that fail their invariants (above)" >&2
		exit 1
	fi
	exit "$covered"
}

main "$@"
