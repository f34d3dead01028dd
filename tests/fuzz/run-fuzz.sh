#!/usr/bin/env bash
# tests/fuzz/run-fuzz.sh SECONDS [HARNESS...]
#
# Runs the libFuzzer harnesses (reply, fault, fixture, config; default all)
# for SECONDS each and prints one line per harness:
#   fuzz <name>: <execs> execs in <s> s, <cov> coverage edges, <n> crashes
# Configures and builds the fuzz build dir when needed (clang, ASan+UBSan,
# -Dfuzz=enabled). Crashes, leaks and hangs (over 10 s) are saved under
# tests/fuzz/crashes/<name>/ and make the script exit 1; after one, fuzzing
# restarts for the time that is left (at most FUZZ_MAX_RESTARTS times).
# A harness that executed no input or covered no edge fails as well.
#
# Environment:
#   FUZZ_BUILD_DIR    build dir (default: <repo>/build-fuzz)
#   FUZZ_JOBS         harnesses run at once (default 1)
#   FUZZ_NICE         nice level of the fuzzers (default 10)
#   FUZZ_MAX_LEN      libFuzzer -max_len (default 16384)
#   FUZZ_MAX_RESTARTS restarts after crashes, per harness (default 5)
#   FUZZ_ARGS         extra libFuzzer arguments, e.g. "-use_value_profile=1"
#   FUZZ_EXPAND_MAX   a smaller cap, in bytes, on what macros expand to
#                     (default: the harness's, 2 MiB + 64 KiB for replies):
#                     faster, but the limits past it are not crossed
#   FUZZ_ALLOW_LIBXML2_STDERR=1  skip the "libxml2 printed nothing" check
#                     (to look past that open finding; README.md)
#   FUZZ_ALLOW_NAMES_HISTORY=1   let a reused workspace answer a reply near
#                     the distinct-names limit otherwise than a fresh one
#   FUZZ_ALLOW_SLOW_SCAN=1       skip documents whose end tags make the
#                     structure scan quadratic
#   FUZZ_ALLOW_SLOW_DECODE=1     skip documents over 64 KiB in an encoding
#                     libxml2 reads through ICU (quadratic decoding)
#   FUZZ_ALLOW_SLOW_COMMENT=1    skip fixtures whose comments' "--" make
#                     libxml2's tree parser quadratic
#                     (each looked past a finding while it was open; all
#                     four are fixed: README.md)
#
# The corpus grows in <build>/fuzz-work/<name>/corpus across runs; it starts
# from the seeds (the test data the harness's replay test reads and the
# built-in seeds, heavy ones included, turned into inputs by
# fuzz-replay-<name> --write-corpus) and tests/fuzz/regress/<name>/. Inputs
# may hold macros (fuzz_expand.c): the dictionaries carry their starts.
set -euo pipefail

# All in one function: bash reads the whole of it before running any, so
# editing this file while it runs cannot break the run.
main() {
	FUZZ_DIR=$(cd "$(dirname "$0")" && pwd -L)
	ROOT=$(cd "$FUZZ_DIR/../.." && pwd -L)
	BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
	JOBS=${FUZZ_JOBS:-1}
	NICE=${FUZZ_NICE:-10}
	MAX_LEN=${FUZZ_MAX_LEN:-16384}
	MAX_RESTARTS=${FUZZ_MAX_RESTARTS:-5}
	# ALL, seeds_for, dict_for
	# shellcheck source=tests/fuzz/harnesses.sh
	. "$FUZZ_DIR/harnesses.sh"

	usage() {
		echo "usage: $0 SECONDS [${ALL[*]}]" >&2
		exit 2
	}

	[ $# -ge 1 ] || usage
	SECS=$1
	shift
	[[ $SECS =~ ^[1-9][0-9]*$ ]] || usage
	HARNESSES=("$@")
	[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=("${ALL[@]}")
	for h in "${HARNESSES[@]}"; do
		[[ " ${ALL[*]} " == *" $h "* ]] || { echo "unknown harness: $h" >&2; usage; }
	done

	if [ ! -f "$BUILD/build.ninja" ]; then
		command -v clang >/dev/null || { echo "run-fuzz: clang is not installed" >&2; exit 2; }
		echo "run-fuzz: configuring $BUILD (clang, ASan+UBSan, -Dfuzz=enabled)" >&2
		CC=clang meson setup "$BUILD" "$ROOT" -Dfuzz=enabled -Db_sanitize=address,undefined \
			-Db_lundef=false >/dev/null
	fi
	targets=()
	for h in "${HARNESSES[@]}"; do
		targets+=("tests/fuzz/fuzz-$h" "tests/fuzz/fuzz-replay-$h")
	done
	nice -n "$NICE" ninja -C "$BUILD" "${targets[@]}" >/dev/null

	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

	# artifacts DIR: how many crash/leak/timeout/oom files DIR holds
	artifacts() {
		find "$1" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
			-o -name 'oom-*' \) 2>/dev/null | wc -l
	}

	# fuzz_one NAME: run one harness for SECS, write its summary line to work/summary
	fuzz_one() {
		local h=$1 work=$BUILD/fuzz-work/$1 crashes=$ROOT/tests/fuzz/crashes/$1
		local before after execs=0 cov=0 t0 t1 left runs=0 log n c seeds=()
		mkdir -p "$work/corpus" "$crashes"
		rm -rf "$work/seeds" "$work"/run-*.log "$work/summary"
		read -r -a seeds <<<"$(seeds_for "$h")"
		local present=()
		for s in "${seeds[@]}"; do [ -e "$s" ] && present+=("$s"); done
		"$BUILD/tests/fuzz/fuzz-replay-$h" --write-corpus "$work/seeds" --builtin \
			--seeds "${present[@]}" >/dev/null
		before=$(artifacts "$crashes")
		t0=$(date +%s.%N)
		left=$SECS
		: >"$work/fuzz.log"
		while [ "$left" -gt 0 ]; do
			runs=$((runs + 1))
			log=$work/run-$runs.log
			set +e
			nice -n "$NICE" "$BUILD/tests/fuzz/fuzz-$h" -max_total_time="$left" -rss_limit_mb=2048 \
				-timeout=10 -max_len="$MAX_LEN" -print_final_stats=1 -dict="$(dict_for "$h")" \
				-artifact_prefix="$crashes/" ${FUZZ_ARGS:-} \
				"$work/corpus" "$work/seeds" "$FUZZ_DIR/regress/$h" >"$log" 2>&1
			set -e
			cat "$log" >>"$work/fuzz.log"
			# (a run that stops while loading its corpus prints neither)
			n=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
			[ -n "$n" ] || n=$({ grep -o '^#[0-9]*' "$log" || true; } | tail -1 | tr -d '#')
			execs=$((execs + ${n:-0}))
			c=$({ grep -o ' cov: [0-9]*' "$log" || true; } | tail -1 | tr -dc '0-9')
			[ -n "$c" ] && [ "$c" -gt "$cov" ] && cov=$c
			t1=$(date +%s.%N)
			left=$(awk -v s="$SECS" -v a="$t0" -v b="$t1" 'BEGIN { l = s - (b - a); print (l > 1) ? int(l) : 0 }')
			# A clean run ends at max_total_time; anything else was a finding.
			if grep -q '^Done [0-9]* runs in' "$log" || [ "$runs" -gt "$MAX_RESTARTS" ]; then
				break
			fi
		done
		after=$(artifacts "$crashes")
		printf 'fuzz %s: %s execs in %s s, %s coverage edges, %s crashes\n' "$h" "$execs" \
			"$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')" "$cov" \
			"$((after - before))" >"$work/summary"
	}

	pids=()
	for h in "${HARNESSES[@]}"; do
		fuzz_one "$h" &
		pids+=($!)
		while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
			wait -n || true
		done
	done
	wait "${pids[@]}" 2>/dev/null || true

	status=0
	for h in "${HARNESSES[@]}"; do
		line=$(cat "$BUILD/fuzz-work/$h/summary" 2>/dev/null || echo "fuzz $h: did not run")
		echo "$line"
		# Findings first; then a harness that ran nothing (no input
		# executed or no edge covered: it failed to start, or its corpus
		# never loaded) found nothing because it did not look: a failure.
		case $line in
		*": did not run")
			status=1
			echo "run-fuzz: $h did not run (logs in $BUILD/fuzz-work/$h/)" >&2
			;;
		*", 0 crashes")
			case $line in
			*": 0 execs "* | *", 0 coverage edges,"*)
				status=1
				echo "run-fuzz: $h ran nothing (log: $BUILD/fuzz-work/$h/fuzz.log)" >&2
				;;
			esac
			;;
		*)
			status=1
			echo "run-fuzz: $h: findings under tests/fuzz/crashes/$h/ (logs in $BUILD/fuzz-work/)" >&2
			;;
		esac
	done
	exit "$status"
}

main "$@"
