#!/bin/sh
# wmsctl end to end, as scripts use it: exit codes, stdout, the one-line
# errors on stderr, and load's JSON. Prints TAP.
#
# usage: test_cli.sh GROUP WMSCTL FIXTURES_DIR PYTHON3|none CHECK_LOAD_PY [WMS_SIM]
#   GROUP: usage | fixtures | load | network | live (against wms-sim)
# shellcheck disable=SC2086 # $ORDER, $vg and $run_env are word lists on purpose
set -u
group=$1 wmsctl=$2 fx=$3 python=$4 check_load=$5 sim=${6:-}
# (no `trap ... EXIT` for the clean-up: dash leaks its text, which valgrind
# would blame on this test)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wmsctl-test.XXXXXX") || exit 1
n=0 failed=0
unset WMS_ENDPOINT # the caller's must not change what these tests see
run_env=''         # extra VAR=value for the next run

# Under `meson test --setup=valgrind` this script runs under valgrind, and
# wmsctl (its child) under a valgrind of its own. 99 = valgrind found errors.
vg='' scale=1
if [ "${WMS_UNDER_VALGRIND:-0}" = 1 ] && command -v valgrind >/dev/null 2>&1; then
	vg="valgrind -q --error-exitcode=99 --leak-check=full"
	vg="$vg --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect"
	if [ -n "${WMS_SOURCE_ROOT:-}" ]; then
		vg="$vg --suppressions=$WMS_SOURCE_ROOT/tests/valgrind.supp"
	fi
	scale=5
fi

ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	for line in "$@"; do echo "#   $line"; done
	sed 's/^/#   stderr: /' "$tmp/err" | head -n 15
}

# run DESCRIPTION WANT_EXIT ARGS...: wmsctl's output goes to $tmp/out, $tmp/err
run() {
	desc=$1 want=$2
	shift 2
	env $run_env $vg "$wmsctl" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -eq "$want" ]; then
		ok "$desc (exit $want)"
	else
		not_ok "$desc" "exit $got, expected $want: wmsctl $*"
	fi
}

# expect out|err EXTENDED_REGEX DESCRIPTION
expect() {
	if grep -Eq -- "$2" "$tmp/$1"; then
		ok "$3"
	else
		not_ok "$3" "std$1 does not match /$2/:"
		sed 's/^/#   | /' "$tmp/$1" | head -n 10
	fi
}

# expect_out_is TEXT DESCRIPTION: stdout is exactly TEXT (lines separated by \n)
expect_out_is() {
	printf '%b\n' "$1" >"$tmp/want"
	if cmp -s "$tmp/want" "$tmp/out"; then
		ok "$2"
	else
		not_ok "$2" "stdout differs from '$1':"
		sed 's/^/#   | /' "$tmp/out" | head -n 10
	fi
}

expect_empty() {
	if [ ! -s "$tmp/$1" ]; then
		ok "std$1 is empty"
	else
		not_ok "std$1 should be empty"
		sed 's/^/#   | /' "$tmp/$1" | head -n 10
	fi
}

# check_load DESCRIPTION CHECK_LOAD_ARGS...: load's JSON output is consistent
check_load() {
	desc=$1
	shift
	if "$python" "$check_load" "$tmp/out" "$@" >"$tmp/check" 2>&1; then
		ok "$desc"
	else
		not_ok "$desc" "$(cat "$tmp/check")"
		sed 's/^/#   | /' "$tmp/out" | head -n 12
	fi
}

# start_sim ARGS...: wms-sim on a free port of 127.0.0.1; sets $sim_pid, $url
start_sim() {
	rm -f "$tmp/sim.out"
	"$sim" --port 0 --quiet "$@" >"$tmp/sim.out" 2>"$tmp/sim.err" &
	sim_pid=$!
	url=
	i=0
	while [ -z "$url" ] && [ $i -lt 200 ] && kill -0 $sim_pid 2>/dev/null; do
		sleep 0.05
		url=$(sed -n 's/^wms-sim listening on //p' "$tmp/sim.out" 2>/dev/null)
		i=$((i + 1))
	done
	if [ -z "$url" ]; then
		echo "Bail out! wms-sim did not start: $(cat "$tmp/sim.err")"
		kill $sim_pid 2>/dev/null
		rm -rf "$tmp"
		exit 1
	fi
}

stop_sim() {
	kill -TERM $sim_pid
	wait $sim_pid
}

E=http://127.0.0.1:1/wms  # never contacted: --fixtures replaces the network
ORDER="--order-id CLI-OK-1 --sku SKU-A --qty 2 --sku SKU-B --qty 1"

case $group in
usage)
	run "no command" 2
	expect err '^wmsctl: no command given$' "says what is wrong"
	expect err '^usage: wmsctl COMMAND' "and how to call it"
	expect_empty out
	run "unknown command" 2 frobnicate
	expect err "unknown command 'frobnicate'" "names the command"
	run "unknown top-level option" 2 --frobnicate
	run "unknown option" 2 submit --endpoint $E $ORDER --frobnicate
	expect err "^wmsctl: submit: unknown option '--frobnicate'$" "names the option"
	expect err '^usage: wmsctl submit' "prints the command's usage"
	expect_empty out
	run "stray argument" 2 status --endpoint $E --order-id A extra
	run "option without its value" 2 submit --endpoint $E --order-id
	expect err 'needs a value' "says the value is missing"
	run "flag given a value" 2 submit --endpoint $E $ORDER --soap12=yes
	run "option of another command" 2 status --endpoint $E --order-id A --sku B
	expect err 'does not apply to status' "says it does not apply"
	run "option given twice" 2 status --endpoint $E --order-id A --order-id B
	expect err 'given twice' "says it was given twice"
	for q in 0 -1 +5 " 5" 5x abc 1000001 99999999999999999999999 ""; do
		run "--qty '$q' refused" 2 submit --endpoint $E --order-id A --sku S --qty "$q"
	done
	expect err "--qty '': must be a whole number 1-1000000" "explains the range"
	for t in 0 3600001 1e3 -5 4294967296; do
		run "--timeout-ms $t refused" 2 stock --endpoint $E --sku S --timeout-ms "$t"
	done
	run "--connect-timeout-ms x refused" 2 stock --endpoint $E --sku S --connect-timeout-ms x
	run "order id with a space" 2 status --endpoint $E --order-id "bad id"
	expect err "--order-id 'bad id': ids are 1-64 characters" "explains the id rule"
	run "order id of 65 characters" 2 status --endpoint $E \
		--order-id AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
	run "order id of 64 characters accepted (refused endpoint)" 4 status --endpoint $E \
		--order-id AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
	run "sku with a slash" 2 stock --endpoint $E --sku a/b
	run "unknown priority" 2 submit --endpoint $E $ORDER --priority urgent
	run "submit without --order-id" 2 submit --endpoint $E --sku S --qty 1
	run "submit without --sku" 2 submit --endpoint $E --order-id A
	run "--sku without --qty" 2 submit --endpoint $E --order-id A --sku S
	expect err 'give one --qty for each --sku' "says how to pair them"
	run "two --sku, one --qty" 2 submit --endpoint $E --order-id A --sku S --qty 1 --sku T
	run "status without --order-id" 2 status --endpoint $E
	run "stock without --sku" 2 stock --endpoint $E
	run "empty --reason" 2 cancel --endpoint $E --order-id A --reason ""
	run "no endpoint at all" 2 status --order-id A
	expect err -- '--endpoint is required' "asks for --endpoint"
	run "ftp:// endpoint refused by libwms" 2 status --endpoint ftp://127.0.0.1/ --order-id A
	expect err '^wmsctl: STATUS: INVALID_ARG: .*http:// or https://.*\(delivery NOT_SENT\)$' \
		"INVALID_ARG on one line"
	run "--fixtures directory that does not exist" 2 status --fixtures "$tmp/none" --order-id A
	expect err '^wmsctl: STATUS: FIXTURE: ' "says why the fixtures did not load"
	run "load without --count" 2 load --endpoint $E --interval-ms 0
	run "load --count 0" 2 load --endpoint $E --count 0 --interval-ms 0
	run "load without --interval-ms" 2 load --endpoint $E --count 1
	run "load --order-prefix too long for --count" 2 load --endpoint $E --count 100 \
		--interval-ms 0 --order-prefix AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
	run "load --call-log in a missing directory" 2 load --endpoint $E --count 1 \
		--interval-ms 0 --call-log "$tmp/none/log"
	run "load --order-id (not a load option)" 2 load --endpoint $E --count 1 --interval-ms 0 \
		--order-id A

	run "--help" 0 --help
	expect out '^usage: wmsctl COMMAND' "usage on stdout"
	for code in 0 1 2 3 4 5 6 7 8 9; do
		expect out "^  $code  " "exit code $code documented"
	done
	for c in submit status cancel stock load; do
		run "$c --help" 0 "$c" --help
		expect out "^usage: wmsctl $c " "$c usage on stdout"
	done
	run "help load" 0 help load
	expect out -- '--call-log FILE' "load's help documents --call-log"
	run "help for an unknown command" 2 help frobnicate
	run "--version" 0 --version
	expect out '^wmsctl [0-9]+\.[0-9]+\.[0-9]+ \(libwms [0-9]+\.[0-9]+\.[0-9]+\)$' "versions"
	;;

fixtures)
	run "submit, minimal form" 0 submit --fixtures "$fx" $ORDER
	expect_out_is "WMS-CLI-0001" "prints the WMS reference, one line"
	expect_empty err
	run "submit, --opt=value form" 0 submit --fixtures="$fx" --order-id=CLI-OK-1 \
		--sku=SKU-A --qty=2 --sku=SKU-B --qty=1 --timeout-ms=5000 --connect-timeout-ms=1000
	expect_out_is "WMS-CLI-0001" "same reference"
	run "submit --soap12 --priority express" 0 submit --fixtures "$fx" --soap12 \
		--priority express --order-id CLI-SOAP12-1 --sku SKU-A --qty 1
	expect_out_is "WMS-CLI-0012" "SOAP 1.2 reference"
	run "submit rejected: Client fault" 6 submit --fixtures "$fx" --order-id CLI-REJECT-1 \
		--sku SKU-NOPE --qty 1
	expect err '^wmsctl: SUBMIT: SOAP_FAULT: .*Unknown SKU SKU-NOPE.* \(delivery ANSWERED, fault Client, wms_code UNKNOWN_SKU, http 500\)$' \
		"one line: status, message, delivery, fault, wms_code, http"
	expect_empty out
	run "submit: Server fault" 7 submit --fixtures "$fx" --order-id CLI-SERVER-1 \
		--sku SKU-A --qty 1
	expect err 'SOAP_FAULT: .*\(delivery ANSWERED, fault Server, wms_code INTERNAL, http 500\)$' \
		"Server fault detail"
	run "submit: recorded timeout" 5 submit --fixtures "$fx" --order-id CLI-TIMEOUT-1 \
		--sku SKU-A --qty 1
	expect err '^wmsctl: SUBMIT: TIMEOUT: .*\(delivery UNKNOWN\)$' "delivery unknown"
	run "submit: recorded refused connect" 4 submit --fixtures "$fx" \
		--order-id CLI-REFUSED-1 --sku SKU-A --qty 1
	expect err '^wmsctl: SUBMIT: CONNECT: .*\(delivery NOT_SENT\)$' "not sent"
	run "submit: proxy's HTML 502 page" 7 submit --fixtures "$fx" --order-id CLI-PROXY-1 \
		--sku SKU-A --qty 1
	expect err '^wmsctl: SUBMIT: HTTP: .*http 502\)$' "HTTP error with its status"
	run "submit: reply is not XML" 8 submit --fixtures "$fx" --order-id CLI-GARBAGE-1 \
		--sku SKU-A --qty 1
	expect err '^wmsctl: SUBMIT: NOT_XML: ' "bad reply"
	run "submit: nothing recorded for this request" 9 submit --fixtures "$fx" \
		--order-id CLI-UNKNOWN-1 --sku SKU-A --qty 1
	expect err '^wmsctl: SUBMIT: FIXTURE: .*\(delivery NOT_SENT\)$' "FIXTURE on one line"
	expect err '^--- fixture ' "and a diff against the nearest fixture"
	run "status" 0 status --fixtures "$fx" --order-id CLI-OK-1
	expect_out_is "CLI-OK-1 WMS-CLI-0001 PICKING 2024-05-01T10:15:00Z" "status line"
	run "cancel --reason" 0 cancel --fixtures "$fx" --order-id CLI-OK-1 \
		--reason "customer request"
	expect_out_is "CLI-OK-1 CANCELLED 0" "cancel line"
	run "stock, two SKUs" 0 stock --fixtures "$fx" --sku SKU-A --sku SKU-B
	expect_out_is "SKU-A 10 2 8\nSKU-B 0 0 0" "one line per SKU, in order"
	if [ -w /dev/full ]; then
		$vg "$wmsctl" submit --fixtures "$fx" $ORDER >/dev/full 2>"$tmp/err"
		got=$?
		if [ "$got" -eq 1 ]; then ok "stdout that cannot be written: exit 1"; else
			not_ok "stdout that cannot be written" "exit $got, expected 1"; fi
	fi
	;;

load)
	if [ "$python" = none ]; then
		echo "1..0 # SKIP python3 not found: cannot check the JSON"
		rm -rf "$tmp"
		exit 0
	fi
	run "load, all accepted" 0 load --fixtures "$fx" --count 5 --interval-ms 0 \
		--order-prefix cli-load --sku LOAD-OK --qty 1 --call-log "$tmp/log"
	check_load "5 JSON lines + summary, call log all ok" --statuses 'OK*5' \
		--call-log "$tmp/log" --outcomes 'ok*5'
	expect out '^\{"summary":\{"calls":5,"ok":5,"failed":0,"rejected":0,"by_status":\{"OK":5\},"transitions":\[\],' \
		"summary object"
	run "load, WMS failing: breaker opens" 0 load --fixtures "$fx" --count 6 --interval-ms 0 \
		--sku LOAD-FAIL --qty 1 --breaker-threshold 2 --open-ms 600000 --call-log "$tmp/log"
	check_load "2 Server faults, then CIRCUIT_OPEN; only calls made are logged" \
		--statuses 'SOAP_FAULT*2,CIRCUIT_OPEN*4' --transition 'CLOSED>OPEN' \
		--call-log "$tmp/log" --outcomes 'fail*2'
	expect out '"status":"SOAP_FAULT",.*"breaker":"OPEN".*"wms_code":"OVERLOADED","http_status":503\}$' \
		"the call that trips it reports breaker OPEN"
	run "load, Client faults: not the WMS's fault" 0 load --fixtures "$fx" --count 4 \
		--interval-ms 0 --sku LOAD-REJECT --qty 1 --breaker-threshold 2 --call-log "$tmp/log"
	check_load "rejections never open the breaker" --statuses 'SOAP_FAULT*4' \
		--call-log "$tmp/log" --outcomes 'ignore*4'
	run "load, no fixture matches" 0 load --fixtures "$fx" --count 3 --interval-ms 0 \
		--sku LOAD-NOPE --qty 1 --breaker-threshold 1 --call-log "$tmp/log" \
		--order-prefix cli.load
	check_load "FIXTURE messages with quotes are valid JSON; permits handed back" \
		--statuses 'FIXTURE*3' --call-log "$tmp/log" --outcomes 'ignore*3'
	run "load on a schedule" 0 load --fixtures "$fx" --count 3 --interval-ms 40 \
		--order-prefix cli-load --sku LOAD-OK --qty 1
	check_load "calls start no earlier than scheduled" --statuses 'OK*3' \
		--min-t-ms 2:40 --min-t-ms 3:80
	# SIGTERM once the first line is out: the run stops, with its summary
	rm -f "$tmp/out"
	$vg "$wmsctl" load --fixtures "$fx" --count 10000 --interval-ms 20 --sku LOAD-REJECT \
		--qty 1 >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	i=0
	while [ ! -s "$tmp/out" ] && [ $i -lt 600 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	kill -TERM $pid
	wait $pid
	got=$?
	if [ "$got" -eq 0 ]; then ok "load stopped by SIGTERM (exit 0)"; else
		not_ok "load stopped by SIGTERM" "exit $got, expected 0"; fi
	expect out '"interrupted":true\}\}$' "summary says it was interrupted"
	check_load "and is consistent with the calls made"
	;;

network)
	run "submit to a refused endpoint" 4 submit --endpoint http://127.0.0.1:1/ $ORDER
	expect err '^wmsctl: SUBMIT: CONNECT: .*\(delivery NOT_SENT\)$' "CONNECT, not sent"
	expect_empty out
	run_env=WMS_ENDPOINT=http://127.0.0.1:1/
	run "endpoint from WMS_ENDPOINT" 4 status --order-id CLI-OK-1
	run_env=
	if [ "$python" = none ]; then
		echo "# python3 not found: load checks skipped"
	else
		run "load against a refused endpoint" 0 load --endpoint http://127.0.0.1:1/ \
			--count 6 --interval-ms 0 --breaker-threshold 2 --open-ms 600000 \
			--call-log "$tmp/log"
		check_load "CONNECT twice, then CIRCUIT_OPEN" \
			--statuses 'CONNECT*2,CIRCUIT_OPEN*4' --transition 'CLOSED>OPEN' \
			--call-log "$tmp/log" --outcomes 'fail*2'
		expect out '"status":"CIRCUIT_OPEN","delivery":"NOT_SENT","breaker":"OPEN"' \
			"CIRCUIT_OPEN lines"
		# open 150 ms, a call every 100 ms for 500 ms: probes go out and fail again
		run "load: the breaker probes and reopens" 0 load --endpoint http://127.0.0.1:1/ \
			--count 6 --interval-ms $((100 * scale)) --breaker-threshold 1 \
			--open-ms $((150 * scale))
		check_load "transitions through HALF_OPEN" --transition 'CLOSED>OPEN' \
			--has-transition 'OPEN>HALF_OPEN' --has-transition 'HALF_OPEN>OPEN'
	fi
	;;

live)
	# The real thing over HTTP: wms-sim (examples/sim) as the WMS. Its orders
	# stay RECEIVED (one state step an hour), so they can be cancelled.
	start_sim --tick-ms 3600000
	run "submit" 0 submit --endpoint "$url" --order-id LIVE-1 --sku SKU-1 --qty 2
	expect out '^WMS-[A-Za-z0-9._:-]+$' "prints the WMS reference"
	ref=$(cat "$tmp/out")
	run "submit again, same order" 0 submit --endpoint "$url" --order-id LIVE-1 \
		--sku SKU-1 --qty 2
	expect_out_is "$ref" "same reference: idempotent on the order id"
	run "same order id, other lines" 6 submit --endpoint "$url" --order-id LIVE-1 \
		--sku SKU-2 --qty 1
	expect err 'wms_code DUPLICATE_MISMATCH' "DUPLICATE_MISMATCH"
	run "unknown SKU" 6 submit --endpoint "$url" --order-id LIVE-2 --sku NOPE-1 --qty 1
	expect err '^wmsctl: SUBMIT: SOAP_FAULT: .*fault Client, wms_code UNKNOWN_SKU' \
		"UNKNOWN_SKU"
	run "submit --soap12 --priority overnight" 0 submit --soap12 --endpoint "$url" \
		--order-id LIVE-3 --sku SKU-3 --qty 1 --priority overnight
	run "status" 0 status --endpoint "$url" --order-id LIVE-1
	expect out "^LIVE-1 $ref [A-Z]+ [0-9T:.Z+-]+\$" "order id, reference, state, time"
	run "stock" 0 stock --endpoint "$url" --sku SKU-1 --sku SKU-2
	expect out '^SKU-1 [0-9]+ [0-9]+ [0-9]+$' "first SKU's line"
	expect out '^SKU-2 [0-9]+ [0-9]+ [0-9]+$' "second SKU's line"
	run "cancel" 0 cancel --endpoint "$url" --order-id LIVE-1 --reason "test"
	expect_out_is "LIVE-1 CANCELLED 0" "cancelled now"
	run "cancel again" 0 cancel --endpoint "$url" --order-id LIVE-1
	expect_out_is "LIVE-1 CANCELLED 1" "already cancelled"
	run "status of an unknown order" 6 status --endpoint "$url" --order-id LIVE-NOPE
	if [ "$python" != none ]; then
		run "load" 0 load --endpoint "$url" --count 5 --interval-ms 0 \
			--call-log "$tmp/log"
		check_load "5 orders accepted" --statuses 'OK*5' --call-log "$tmp/log" \
			--outcomes 'ok*5'
	fi
	stop_sim

	start_sim --fault server-fault
	run "WMS failing: Server fault" 7 submit --endpoint "$url" --order-id LIVE-4 \
		--sku SKU-1 --qty 1
	if [ "$python" != none ]; then
		run "load while the WMS fails" 0 load --endpoint "$url" --count 5 \
			--interval-ms 0 --breaker-threshold 2 --open-ms 600000
		check_load "the breaker opens after 2" --statuses 'SOAP_FAULT*2,CIRCUIT_OPEN*3' \
			--transition 'CLOSED>OPEN'
	fi
	stop_sim

	start_sim --fault hang
	run "WMS hangs: deadline" 5 submit --endpoint "$url" --order-id LIVE-5 --sku SKU-1 \
		--qty 1 --timeout-ms 300
	expect err '^wmsctl: SUBMIT: TIMEOUT: .*\(delivery UNKNOWN\)$' "TIMEOUT, delivery unknown"
	stop_sim
	;;

*)
	echo "Bail out! unknown group '$group'"
	rm -rf "$tmp"
	exit 2
	;;
esac

rm -rf "$tmp"
echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
