#!/bin/sh
# libwms is usable as a meson subproject: a tiny project pulls it in with
# dependency('wms', fallback : ...), builds against it and runs.
# usage: subproject.sh SOURCE_ROOT
set -eu
src=$1
tmp=$(mktemp -d)
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
mkdir -p "$tmp/app/subprojects"
ln -s "$src" "$tmp/app/subprojects/libwms"
cat > "$tmp/app/meson.build" <<'MESON'
project('app', 'c', default_options : ['c_std=c11'])
wms = dependency('wms', fallback : ['libwms', 'wms_dep'], default_options : ['tests=disabled'])
executable('app', 'app.c', dependencies : wms)
MESON
cat > "$tmp/app/app.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <wms/wms.h>
int main(void)
{
	wms_breaker *b;
	if (wms_breaker_new(&b, NULL) != WMS_OK)
		return 1;
	printf("libwms %s, breaker %s\n", wms_version(), wms_breaker_state_name(wms_breaker_state_get(b)));
	wms_breaker_free(b);
	return strcmp(wms_status_name(WMS_ERR_CIRCUIT_OPEN), "CIRCUIT_OPEN") != 0;
}
C
meson setup --wrap-mode=nodownload "$tmp/app/build" "$tmp/app" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
ninja -C "$tmp/app/build" app >>"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
"$tmp/app/build/app"
