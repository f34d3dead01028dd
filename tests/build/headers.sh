#!/bin/sh
# Every public header compiles alone, as pedantic C11 and as C++, and
# speaks of the product only (not of the project's seed documents or
# issues, which its users never see).
# usage: headers.sh CC CXX INCLUDE_DIR
set -eu
cc=$1 cxx=$2 inc=$3
fail=0 n=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for h in $(cd "$inc" && find wms -name '*.h' | sort); do
	printf '#include <%s>\n#include <%s>\nint wms_header_test_dummy;\n' "$h" "$h" > "$tmp/t.c"
	n=$((n + 1))
	if ! "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$inc" "$tmp/t.c"; then
		echo "FAIL (C11): $h"; fail=1
	fi
	if [ "$cxx" != none ]; then
		cp "$tmp/t.c" "$tmp/t.cpp"
		if ! "$cxx" -std=c++11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$inc" "$tmp/t.cpp"; then
			echo "FAIL (C++11): $h"; fail=1
		fi
	fi
	if grep -n -i -E '\bseed [0-9]{3}\b|\bseeds?\b.*\b(000|001|002)\b|\bissue [0-9]+\b' "$inc/$h"; then
		echo "FAIL (speaks of project documents): $h"; fail=1
	fi
done
echo "$n headers checked"
exit $fail
