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
# FUZZ_VERBOSE notes; the keys and ranges from src/config.c's table, a
# bound that is a macro resolved from include/wms/). A limit not crossed
# both ways is marked MISSING and the script exits 1; so it does when a key
# or bound of that table cannot be read (ERROR, never left out) and when
# any input replayed fails its invariants.
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
# refused above (its FUZZ_VERBOSE notes and failure messages). The keys and
# their ranges come from src/config.c's table; a bound there may be a macro
# of the public headers (include/wms/) or of config.c itself. A key whose
# entry or bound cannot be read is an error, never left out.
errors = 0
if 'config' in harnesses:
    src = re.sub(r'/\*.*?\*/', ' ', open(os.path.join(root, 'src/config.c')).read(), flags=re.S)

    def config_error(msg):
        global errors
        errors += 1
        print('limit-coverage: config: ERROR: ' + msg)

    # Macros: "#define NAME VALUE" on one line, VALUE resolved when used.
    defines = {}
    headers = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, 'include/wms'))
               for f in sorted(fs) if f.endswith('.h')]
    for path in sorted(headers) + [os.path.join(root, 'src/config.c')]:
        text = re.sub(r'/\*.*?\*/', ' ', open(path).read(), flags=re.S)
        for m in re.finditer(r'^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]+)$', text, re.M):
            name, value = m.group(1), m.group(2).strip()
            if defines.get(name, (value,))[0] != value:
                defines[name] = (None, 'defined twice: %s and %s' % (defines[name][1], path))
            else:
                defines[name] = (value, os.path.relpath(path, root))

    def resolve(tok, seen=()):
        """The value of a bound: an integer literal, a macro, or integer
        arithmetic (+ - * << and casts) of those. None if it is not."""
        tok = tok.strip()
        if tok in seen:
            return None
        e = re.sub(r'\(\s*(?:size_t|uint(?:8|16|32|64)_t|unsigned(?:\s+long)*|long)\s*\)', '', tok)
        out = []
        for part in re.findall(r'0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|\w+|<<|\S', e):
            if re.match(r'\d|0[xX]', part):
                out.append(str(int(part.rstrip('uUlL'), 0)))
            elif re.match(r'[A-Za-z_]\w*$', part):
                value = defines.get(part, (None,))[0]
                v = resolve(value, seen + (tok,)) if value is not None else None
                if v is None:
                    return None
                out.append(str(v))
            elif part in ('+', '-', '*', '<<', '(', ')'):
                out.append(part)
            else:
                return None
        try:
            v = eval(' '.join(out), {'__builtins__': {}}) if out else None
        except Exception:
            return None
        return v if isinstance(v, int) and v >= 0 else None

    # The blocks, from "enum block { B_... }" and block_path[], in order.
    eb = re.search(r'enum\s+block\s*\{([^}]*)\}', src)
    bp = re.search(r'block_path\[\]\s*=\s*\{([^}]*)\}', src)
    block = {}
    if not eb or not bp:
        config_error('src/config.c: no "enum block" or block_path[]')
    else:
        ids = [b.strip()[2:] for b in eb.group(1).split(',') if b.strip()]
        paths = re.findall(r'"([^"]*)"', bp.group(1))
        if len(ids) != len(paths):
            config_error('src/config.c: %d blocks but %d block paths' % (len(ids), len(paths)))
        block = dict(zip(ids, paths))

    # The numeric keys: every T_UINT or T_PERCENT entry of keys[].
    table = re.search(r'key_def\s+keys\[\]\s*=\s*\{(.*?)\n\};', src, re.S)
    num = []  # (path, lo text, hi text, lo, hi)
    if not table:
        config_error('src/config.c: no keys[] table')
    else:
        for m in re.finditer(r'\{\s*(K\w+)\s*,([^{}]*)\}', table.group(1)):
            f = [x.strip() for x in m.group(2).split(',')]
            if len(f) < 5 or not f[0].startswith('B_') or not re.match(r'"\w+"$', f[1]):
                config_error('src/config.c: cannot read the entry of %s' % m.group(1))
                continue
            if f[2] not in ('T_UINT', 'T_PERCENT'):
                continue
            if f[0][2:] not in block:
                config_error('%s: block %s is not in block_path[]' % (m.group(1), f[0]))
                continue
            lo, hi = resolve(f[3]), resolve(f[4])
            for t, v in ((f[3], lo), (f[4], hi)):
                if v is None:
                    config_error('%s.%s: bound %s is not a number or a macro of include/wms/'
                                 ' or src/config.c' % (block[f[0][2:]], f[1].strip('"'), t))
            num.append((block[f[0][2:]] + '.' + f[1].strip('"'), f[3], f[4], lo, hi))
    ranges = {k: (lo, hi) for k, _, _, lo, hi in num}

    keys = {}
    notes = open(os.path.join(work, 'config.notes'), errors='replace').read().split('\n')
    acc = re.compile(r': bound (\S+): accepted at (lo|hi) \((\d+)\)$')
    bad = re.compile(r': CONFIG fuzz\.yaml:\d+: (\S+): must be (\d+)\.\.(\d+) \(got (-?\d+)\)$')
    stale = set()
    for l in notes:
        m = acc.search(l)
        if m:
            k, which, v = m.group(1), m.group(2), int(m.group(3))
            if k in ranges and None in ranges[k]:
                continue  # its bound not resolved: an error above
            want = ranges.get(k, (None, None))[0 if which == 'lo' else 1]
            if want != v:
                if k not in stale:  # its range in fuzz_config.c is not src/config.c's
                    stale.add(k)
                    config_error('fuzz_config.c notes %s accepted at %s = %d; src/config.c: %s' %
                                 (k, which, v, '%s..%s' % ranges[k] if k in ranges
                                  else 'no such numeric key'))
                continue
            keys.setdefault(k, [0, 0, 0, 0])[1 if which == 'lo' else 2] += 1
            continue
        m = bad.search(l)
        if m:
            k, lo, hi, v = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
            keys.setdefault(k, [0, 0, 0, 0])[0 if v < lo else 3] += 1
    print('\nconfig, each numeric key (refused below / accepted at lo / accepted at hi / refused above):')
    out = []
    for k, lo_t, hi_t, lo, hi in num:
        # bounds that are macros are named after the counts
        names = '' if re.match(r'\d+$', lo_t) and re.match(r'\d+$', hi_t) else \
            '  (%s..%s)' % (lo_t, hi_t)
        if lo is None or hi is None:
            out.append((k, '%s..%s' % (lo_t, hi_t), 'ERROR: a bound not resolved', ''))
            continue
        c = keys.get(k, [0, 0, 0, 0])
        # a lower bound of 0 (the default: jitter's; no cap, no wait, no
        # cache) is told from a key not given by fuzz_config.c's marked
        # options: required like any other
        need = [0, 1, 2, 3]
        ok = all(c[i] > 0 for i in need)
        if not ok:
            missing += 1
        out.append((k, '%d..%d' % (lo, hi), '%s / %s / %s / %s' % (
            fmt(c[0]), fmt(c[1]), fmt(c[2]), fmt(c[3])),
            ('' if ok else '  MISSING') + names))
    w = [max([len(r[i]) for r in out] + [0]) for i in range(3)]
    for r in out:
        print(('  %-*s  %-*s  %-*s%s' % (w[0], r[0], w[1], r[1], w[2], r[2], r[3])).rstrip())

print('\n%d limit(s) not crossed both ways' % missing)
if errors:
    print('%d error(s) reading src/config.c or the notes (above)' % errors)
sys.exit(1 if missing or errors else 0)
PY
	if [ "$FAILED_INPUTS" -gt 0 ]; then
		echo "limit-coverage: $FAILED_INPUTS replay(s) had inputs that fail their invariants (above)" >&2
		exit 1
	fi
	exit "$covered"
}

main "$@"
