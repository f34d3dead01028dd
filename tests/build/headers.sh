#!/bin/sh
# Every public header compiles alone, as pedantic C11 and as C++, and
# speaks of the product only (not of the project's seed documents or
# issues, which its users never see).
# The event-loop adapters (wms/adapters/NAME.h, header only) include their
# loop's header: each compiles the same way, with its library's flags
# (pkg-config --cflags NAME) and -D_POSIX_C_SOURCE=200809L (uv.h needs
# POSIX types that strict C11 hides), when the build found the library.
# LOOPS says which: "NAME=yes" or "NAME=no" words, one per adapter. One
# whose library was not found is reported as SKIP and not counted as
# checked (its wording still is); one missing from LOOPS fails.
# usage: headers.sh CC CXX INCLUDE_DIR [LOOPS]
set -eu
cc=$1 cxx=$2 inc=$3 loops=${4:-}
fail=0 n=0 skipped=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for h in $(cd "$inc" && find wms -name '*.h' | sort); do
	extra=""
	case $h in
	wms/adapters/*)
		name=$(basename "$h" .h) found=""
		for l in $loops; do
			case $l in "$name="*) found=${l#*=} ;; esac
		done
		case $found in
		yes)
			extra="-D_POSIX_C_SOURCE=200809L $(pkg-config --cflags "$name")"
			h_checked=1
			;;
		no)
			echo "SKIP (C11, C++11): $h: $name not found by the build"
			skipped=$((skipped + 1))
			h_checked=0
			;;
		*)
			echo "FAIL: $h: an adapter that LOOPS does not name (tests/build/meson.build)"
			fail=1
			h_checked=0
			;;
		esac
		;;
	*) h_checked=1 ;;
	esac
	if [ "$h_checked" = 1 ]; then
		printf '#include <%s>\n#include <%s>\nint wms_header_test_dummy;\n' "$h" "$h" > "$tmp/t.c"
		n=$((n + 1))
		# shellcheck disable=SC2086 # $extra: words
		if ! "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only $extra -I"$inc" "$tmp/t.c"; then
			echo "FAIL (C11): $h"; fail=1
		fi
		if [ "$cxx" != none ]; then
			cp "$tmp/t.c" "$tmp/t.cpp"
			# shellcheck disable=SC2086
			if ! "$cxx" -std=c++11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only $extra -I"$inc" "$tmp/t.cpp"; then
				echo "FAIL (C++11): $h"; fail=1
			fi
		fi
	fi
	if grep -n -i -E '\bseed [0-9]{3}\b|\bseeds?\b.*\b(000|001|002)\b|\bissue [0-9]+\b' "$inc/$h"; then
		echo "FAIL (speaks of project documents): $h"; fail=1
	fi
done
echo "$n headers checked, $skipped skipped"
exit $fail
