#!/bin/sh
# wmsctl end to end, as scripts use it: exit codes, stdout, the one-line
# errors on stderr, load's and breaker-sim's JSON, health documents. Prints TAP.
#
# usage: test_cli.sh GROUP WMSCTL FIXTURES_DIR PYTHON3|none CHECK_LOAD_PY [WMS_SIM]
#   GROUP: usage | fixtures | load | network | config | health | tuner |
#          health-listen | shared (redis-server) |
#          live (against wms-sim)
# shellcheck disable=SC2086 # $ORDER, $vg and $run_env are word lists on purpose
set -u
group=$1 wmsctl=$2 fx=$3 python=$4 check_load=$5 sim=${6:-}
case $wmsctl in /*) ;; *) wmsctl=$PWD/$wmsctl ;; esac # some tests cd
here=$(dirname "$check_load")   # tests/cli: the checkers
cfgs=$here/../data/cli/configs
lab=$here/../../examples/lab    # seed 002's presets
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

# run DESCRIPTION WANT_EXIT ARGS...: wmsctl's output goes to $tmp/out, $tmp/err;
# its stdin is $run_in (default: nothing)
run_in=/dev/null
run() {
	desc=$1 want=$2
	shift 2
	env $run_env $vg "$wmsctl" "$@" <"$run_in" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -eq "$want" ]; then
		ok "$desc (exit $want)"
	else
		not_ok "$desc" "exit $got, expected $want: wmsctl $*"
	fi
}

# expect out|err [--] EXTENDED_REGEX DESCRIPTION (-- before a regex that
# starts with -)
expect() {
	where=$1
	shift
	[ "$1" = -- ] && shift
	if grep -Eq -- "$1" "$tmp/$where"; then
		ok "$2"
	else
		not_ok "$2" "std$where does not match /$1/:"
		sed 's/^/#   | /' "$tmp/$where" | head -n 10
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
# check_sim DESCRIPTION CALLS CHECK_SIM_ARGS...: breaker-sim's output for CALLS
check_sim() {
	desc=$1
	shift
	if "$python" "$here/check_sim.py" "$tmp/out" "$@" >"$tmp/check" 2>&1; then
		ok "$desc"
	else
		not_ok "$desc" "$(cat "$tmp/check")"
		sed 's/^/#   | /' "$tmp/out" | head -n 45
	fi
}

# check_health DESCRIPTION CHECK_HEALTH_ARGS...: health's JSON document
check_health() {
	desc=$1
	shift
	if "$python" "$here/check_health.py" "$tmp/out" "$@" >"$tmp/check" 2>&1; then
		ok "$desc"
	else
		not_ok "$desc" "$(cat "$tmp/check")"
		sed 's/^/#   | /' "$tmp/out" | head -n 5
	fi
}

# sigterm_load PID: a load running in the background stops on SIGTERM, exit
# 0, its summary saying so
sigterm_load() {
	kill -TERM "$1"
	wait "$1"
	got=$?
	if [ "$got" -eq 0 ]; then ok "load stopped by SIGTERM (exit 0)"; else
		not_ok "load stopped by SIGTERM" "exit $got, expected 0"; fi
	expect out '"interrupted":true\}\}$' "summary says it was interrupted"
}

need_python() {
	if [ "$python" = none ]; then
		echo "1..0 # SKIP python3 not found: cannot check the JSON"
		rm -rf "$tmp"
		exit 0
	fi
}

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

# wmsctl call: GetShipmentStatus (wsdl/warehouse.wsdl; no typed call in libwms)
SHIP="--operation GetShipmentStatus --action urn:libwms:warehouse:1/GetShipmentStatus"
# ship_body ORDER_ID FILE: its request element
ship_body() {
	printf '<wh:GetShipmentStatusRequest xmlns:wh="urn:libwms:warehouse:1">%s%s\n' \
		"<wh:clientOrderId>$1</wh:clientOrderId>" '</wh:GetShipmentStatusRequest>' >"$2"
}
# pad_to FILE BYTES: FILE grown to BYTES with trailing blanks (still the same element)
pad_to() {
	have=$(wc -c <"$1")
	head -c $(($2 - have)) /dev/zero | tr '\0' ' ' >>"$1"
}

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
	# --concurrency N: 1-65536, checked before anything is sent
	for c in 0 65537 -1 abc 1.5 " 4" ""; do
		run "load --concurrency '$c' refused" 2 load --endpoint $E --count 1 \
			--interval-ms 0 --concurrency "$c"
		expect_empty out
	done
	expect err "^wmsctl: load: --concurrency '': must be a whole number 1-65536\$" \
		"explains the range"
	expect err '^usage: wmsctl load .*\[--concurrency C\]' "prints load's usage"
	run "load --concurrency given twice" 2 load --endpoint $E --count 1 --interval-ms 0 \
		--concurrency 2 --concurrency 3
	run "load --concurrency with --call-log" 2 load --endpoint $E --count 1 \
		--interval-ms 0 --concurrency 2 --call-log "$tmp/log"
	expect err '^wmsctl: load: --call-log records calls made one after another .*not with --concurrency$' \
		"says why"
	if [ -e "$tmp/log" ]; then not_ok "no call log written"; else ok "no call log written"; fi
	run "submit --concurrency (not a submit option)" 2 submit --endpoint $E $ORDER \
		--concurrency 2
	expect err 'does not apply to submit' "says it does not apply"
	run "load --concurrency 65536 accepted (refused endpoint: exit 0)" 0 load --endpoint $E \
		--count 2 --interval-ms 0 --concurrency=65536
	expect out '"concurrency":65536,"max_in_flight":[12],"threads":[0-9]+' \
		"summary says the concurrency"

	# call: every bad body or option is exit 2 before anything is sent (the
	# endpoint refuses connections: a call that went out would be exit 4)
	ship_body CLI-OK-1 "$tmp/ship.xml"
	run "call without --operation" 2 call --endpoint $E --body "$tmp/ship.xml"
	expect err -- '--operation is required' "asks for --operation"
	run "call without --body" 2 call --endpoint $E --operation GetShipmentStatus
	expect err -- '--body is required' "asks for --body"
	run "call: --body that does not exist" 2 call --endpoint $E $SHIP --body "$tmp/none.xml"
	expect err "^wmsctl: call: --body $tmp/none.xml: No such file or directory\$" "says why"
	: >"$tmp/empty.xml"
	run "call: empty --body" 2 call --endpoint $E $SHIP --body "$tmp/empty.xml"
	expect err '^wmsctl: CALL: INVALID_ARG: body is empty \(delivery NOT_SENT\)$' "INVALID_ARG"
	printf 'not <xml' >"$tmp/bad.xml"
	run "call: --body not XML" 2 call --endpoint $E $SHIP --body "$tmp/bad.xml"
	expect err '^wmsctl: CALL: INVALID_ARG: body: .*\(delivery NOT_SENT\)$' "INVALID_ARG"
	printf '<!DOCTYPE x [<!ENTITY e "e">]><x>&e;</x>' >"$tmp/dtd.xml"
	run "call: --body with a DOCTYPE" 2 call --endpoint $E $SHIP --body "$tmp/dtd.xml"
	cp "$tmp/ship.xml" "$tmp/big.xml"
	pad_to "$tmp/big.xml" 1048577
	run "call: --body of 1 MiB + 1 byte" 2 call --endpoint $E $SHIP --body "$tmp/big.xml"
	expect err "^wmsctl: call: --body $tmp/big.xml: larger than 1048576 bytes\$" "says the cap"
	expect_empty out
	run "call: an operation name libwms refuses" 2 call --endpoint $E --operation "Get Ship" \
		--body "$tmp/ship.xml"
	expect err 'INVALID_ARG: call.operation must be 1-64 bytes' "names the rule"
	run "call: unknown option" 2 call --endpoint $E $SHIP --body "$tmp/ship.xml" --frobnicate
	expect err "^wmsctl: call: unknown option '--frobnicate'\$" "names the option"
	run "call: --order-id is not a call option" 2 call --endpoint $E $SHIP \
		--body "$tmp/ship.xml" --order-id A
	run "call: --idempotent takes no value" 2 call --endpoint $E $SHIP --body "$tmp/ship.xml" \
		--idempotent=1
	run "call: --reply-element ''" 2 call --endpoint $E $SHIP --body "$tmp/ship.xml" \
		--reply-element ""
	run "call: --reply-namespace '' accepted (refused endpoint)" 4 call --endpoint $E $SHIP \
		--body "$tmp/ship.xml" --reply-namespace ""
	run "call --help" 0 call --help
	expect out '^usage: wmsctl call --endpoint URL --operation NAME --action URI --body FILE.xml' \
		"call's usage"
	expect out 'at most 1 MiB \(1048576 bytes\)' "says the body's cap"
	expect out '^  9  FIXTURE' "and the exit codes"

	run "--help" 0 --help
	expect out '^usage: wmsctl COMMAND' "usage on stdout"
	for code in 0 1 2 3 4 5 6 7 8 9 10 11; do
		expect out "^  $code  " "exit code $code documented"
	done
	for c in submit status cancel stock load health breaker-sim call; do
		run "$c --help" 0 "$c" --help
		expect out "^usage: wmsctl $c " "$c usage on stdout"
	done
	run "help load" 0 help load
	expect out -- '--call-log FILE' "load's help documents --call-log"
	expect out -- '--config FILE' "and --config"
	expect out -- '--concurrency C +up to C calls in flight at once, 1-65536' \
		"and --concurrency with its range"
	expect out '"max_in_flight"' "and what it adds to the summary"
	run "help health" 0 help health
	expect out '0 UP' "health's help documents UP"
	expect out '10 DEGRADED' "... DEGRADED"
	expect out '11 DOWN' "... and DOWN"
	expect out -- '--prometheus' "and --prometheus"
	run "help breaker-sim" 0 help breaker-sim
	expect out 't_ms,outcome\[,duration_ms\]' "breaker-sim's help gives the CSV format"
	expect out 'moved back by duration_ms' "and the model"
	expect out '"transitions":\["CLOSED","OPEN"' "and the summary"
	if grep -q -- '--endpoint' "$tmp/out"; then
		not_ok "breaker-sim's help lists no network options"
	else
		ok "breaker-sim's help lists no network options"
	fi
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
	expect err '^wmsctl: SUBMIT: TIMEOUT: .*\(delivery UNKNOWN, cause TIMEOUT\)$' "delivery unknown"
	run "submit: recorded refused connect" 4 submit --fixtures "$fx" \
		--order-id CLI-REFUSED-1 --sku SKU-A --qty 1
	expect err '^wmsctl: SUBMIT: CONNECT: .*\(delivery NOT_SENT, cause REFUSED\)$' "not sent"
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
	ship_body CLI-OK-1 "$tmp/ship.xml"
	run "call GetShipmentStatus" 0 call --fixtures "$fx" $SHIP --body "$tmp/ship.xml" \
		--idempotent --reply-element GetShipmentStatusResponse \
		--reply-namespace urn:libwms:warehouse:1
	# every namespace in scope in the reply is declared on the element (a
	# QName in a value keeps its prefix), the Envelope's soap: too
	expect_out_is '<?xml version="1.0" encoding="UTF-8"?>
<wh:GetShipmentStatusResponse xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:wh="urn:libwms:warehouse:1">
  <wh:clientOrderId>CLI-OK-1</wh:clientOrderId>
  <wh:state>IN_TRANSIT</wh:state>
  <wh:carrier>DHL</wh:carrier>
  <wh:trackingNumber>DHL-0000CLI0000OK01</wh:trackingNumber>
</wh:GetShipmentStatusResponse>' "prints the reply's Body element, indented"
	expect_empty err
	pad_to "$tmp/ship.xml" 1048576
	run "call: a --body of exactly 1 MiB" 0 call --fixtures "$fx" $SHIP --body "$tmp/ship.xml"
	expect out '<wh:state>IN_TRANSIT</wh:state>' "answered"
	run "call: another reply element expected" 8 call --fixtures "$fx" $SHIP \
		--body "$tmp/ship.xml" --reply-element GetOrderStatusResponse
	expect err '^wmsctl: CALL: UNEXPECTED_REPLY: .*GetShipmentStatusResponse' "says what came"
	expect_empty out
	ship_body CLI-OK-2 "$tmp/ship2.xml"
	run "call: nothing recorded for this body" 9 call --fixtures "$fx" $SHIP \
		--body "$tmp/ship2.xml"
	expect err '^wmsctl: CALL: FIXTURE: GetShipmentStatus request matches no fixture' \
		"FIXTURE on one line"
	expect err '^\+        "CLI-OK-2"$' "and a diff naming the difference"
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
	# the same breaker settings replay the log as load lived it
	run "load's call log replays through breaker-sim" 0 breaker-sim --breaker-threshold 2 \
		--open-ms 600000 "$tmp/log"
	check_sim "2 failures made, the 2nd opens it" "$tmp/log" --transitions CLOSED,OPEN \
		--counts calls=2,permitted=2,rejected=0,failures=2
	expect_empty err
	run "load, Client faults: not the WMS's fault" 0 load --fixtures "$fx" --count 4 \
		--interval-ms 0 --sku LOAD-REJECT --qty 1 --breaker-threshold 2 --call-log "$tmp/log"
	check_load "rejections never open the breaker" --statuses 'SOAP_FAULT*4' \
		--call-log "$tmp/log" --outcomes 'ignore*4'
	run "load, no fixture matches" 0 load --fixtures "$fx" --count 3 --interval-ms 0 \
		--sku LOAD-NOPE --qty 1 --breaker-threshold 1 --call-log "$tmp/log" \
		--order-prefix cli.load
	check_load "FIXTURE messages with quotes are valid JSON; permits handed back" \
		--statuses 'FIXTURE*3' --call-log "$tmp/log" --outcomes 'ignore*3'
	run_in="$tmp/log"
	run "an ignore-only log on stdin" 0 breaker-sim --breaker-threshold 1
	run_in=/dev/null
	check_sim "ignored calls never open it" "$tmp/log" --transitions CLOSED \
		--counts calls=3,permitted=3,ignored=3
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
	sigterm_load $pid
	check_load "and is consistent with the calls made"

	# --concurrency over fixtures: the replay transport has no event engine,
	# so the loop calls it (one at a time) - same lines, same summary
	run "load --concurrency 1 (fixtures)" 0 load --fixtures "$fx" --count 5 --interval-ms 0 \
		--order-prefix cli-load --sku LOAD-OK --qty 1 --concurrency 1
	check_load "5 lines in seq order + summary, 1 in flight, 1 thread" --concurrency 1 \
		--statuses 'OK*5' --max-in-flight 1 --threads 1
	expect out '^\{"seq":1,"t_ms":[0-9]+,"status":"OK","delivery":"ANSWERED","breaker":"CLOSED","latency_ms":[0-9]+\.[0-9][0-9]\}$' \
		"call lines exactly as without --concurrency"
	expect out '^\{"summary":\{"calls":5,"ok":5,"failed":0,"rejected":0,"by_status":\{"OK":5\},"transitions":\[\],"wall_ms":[0-9]+,"time_waiting_ms":[0-9]+,"concurrency":1,"max_in_flight":1,"threads":1\}\}$' \
		"summary: today's fields, then concurrency, max_in_flight, threads"
	run "load --concurrency 4, WMS failing" 0 load --fixtures "$fx" --count 6 --interval-ms 0 \
		--sku LOAD-FAIL --qty 1 --breaker-threshold 2 --open-ms 600000 --concurrency 4
	# the 4 first are in flight before any ends: all 4 made (the 2nd opens
	# the breaker; the others were permitted before), the 2 next refused
	check_load "4 Server faults, the breaker opens, then CIRCUIT_OPEN" --concurrency 4 \
		--statuses 'SOAP_FAULT*4,CIRCUIT_OPEN*2' --transition 'CLOSED>OPEN' \
		--max-in-flight 4
	run "load --concurrency 2 on a schedule" 0 load --fixtures "$fx" --count 3 \
		--interval-ms 40 --order-prefix cli-load --sku LOAD-OK --qty 1 --concurrency 2
	check_load "calls start no earlier than scheduled" --concurrency 2 --statuses 'OK*3' \
		--min-t-ms 2:40 --min-t-ms 3:80
	rm -f "$tmp/out"
	$vg "$wmsctl" load --fixtures "$fx" --count 10000 --interval-ms 20 --sku LOAD-REJECT \
		--qty 1 --concurrency 8 >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	i=0
	while [ ! -s "$tmp/out" ] && [ $i -lt 600 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	sigterm_load $pid
	check_load "--concurrency 8 stopped by SIGTERM: consistent" --concurrency 8
	;;

network)
	run "submit to a refused endpoint" 4 submit --endpoint http://127.0.0.1:1/ $ORDER
	expect err '^wmsctl: SUBMIT: CONNECT: .*\(delivery NOT_SENT, cause REFUSED\)$' "CONNECT, not sent"
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
			--open-ms $((150 * scale)) --call-log "$tmp/log"
		check_load "transitions through HALF_OPEN" --transition 'CLOSED>OPEN' \
			--has-transition 'OPEN>HALF_OPEN' --has-transition 'HALF_OPEN>OPEN'
		# the log holds only the calls load's breaker let through (at 0, 200,
		# 400 ms: 50 ms after each reopening); the same settings let them all
		# through again, each one a probe that reopens it
		run "the call log replays with the same settings" 0 breaker-sim \
			--breaker-threshold 1 --open-ms $((150 * scale)) "$tmp/log"
		check_sim "every logged call permitted" "$tmp/log" --counts rejected=0,successes=0 \
			--transitions CLOSED,OPEN,HALF_OPEN,OPEN,HALF_OPEN,OPEN
		# 3 in flight before any fails: all 3 sent (the 2nd failure opens
		# it, the 3rd was permitted before), the rest refused at once
		run "load --concurrency 3 against a refused endpoint" 0 load \
			--endpoint http://127.0.0.1:1/ --count 6 --interval-ms 0 \
			--breaker-threshold 2 --open-ms 600000 --concurrency 3
		check_load "CONNECT*3, then CIRCUIT_OPEN*3, on one thread" --concurrency 3 \
			--statuses 'CONNECT*3,CIRCUIT_OPEN*3' --transition 'CLOSED>OPEN' \
			--max-in-flight 3 --threads 1
	fi
	;;

config)
	# --config: the SLA file's client and circuit_breaker blocks; flags win
	run "soap_version 1.2 from the SLA file" 0 submit --fixtures "$fx" \
		--config "$cfgs/soap12.yaml" --priority express --order-id CLI-SOAP12-1 \
		--sku SKU-A --qty 1
	expect_out_is "WMS-CLI-0012" "the SOAP 1.2 exchange matched"
	run "--soap11 overrides the file (the 1.2 fixture no longer matches)" 9 submit \
		--fixtures "$fx" --config "$cfgs/soap12.yaml" --soap11 --priority express \
		--order-id CLI-SOAP12-1 --sku SKU-A --qty 1
	run "--soap11 with --soap12" 2 status --fixtures "$fx" --soap11 --soap12 --order-id A
	expect err 'exclude each other' "says they exclude each other"
	run "endpoint from the SLA file" 4 status --config "$cfgs/refused-endpoint.yaml" \
		--order-id CLI-OK-1
	expect err '^wmsctl: STATUS: CONNECT: .*\(delivery NOT_SENT, cause REFUSED\)$' "went to the file's endpoint"
	run "--endpoint overrides the file" 2 status --config "$cfgs/refused-endpoint.yaml" \
		--endpoint ftp://127.0.0.1/ --order-id CLI-OK-1
	expect err 'INVALID_ARG: .*http:// or https://' "the flag's endpoint was used"
	run_env=WMS_ENDPOINT=ftp://127.0.0.1/
	run "the file's endpoint wins over WMS_ENDPOINT" 4 status \
		--config "$cfgs/refused-endpoint.yaml" --order-id CLI-OK-1
	run "WMS_ENDPOINT when the file has none" 2 status --config "$cfgs/per-operation.yaml" \
		--order-id CLI-OK-1
	expect err 'INVALID_ARG: .*http:// or https://' "WMS_ENDPOINT was used"
	run_env=
	run "no endpoint anywhere" 2 status --config "$cfgs/per-operation.yaml" --order-id A
	expect err 'endpoint is required' "asks for one"
	run "an SLA file with an error" 2 status --config "$cfgs/bad-rate.yaml" --order-id A
	expect err '^wmsctl: status: .*bad-rate\.yaml:3: circuit_breaker\.failure_rate_threshold: must be 1\.\.100 \(got 150\)$' \
		"file, line, key and problem on one line"
	expect_empty out
	run "an SLA file that does not exist" 2 stock --config "$tmp/none.yaml" --sku S
	expect err '^wmsctl: stock: .*none\.yaml: cannot open: ' "says it cannot open it"
	run "--config with an empty value" 2 stock --config "" --sku S
	if [ "$python" = none ]; then
		echo "# python3 not found: load checks skipped"
	else
		run "load: the breaker from the SLA file" 0 load --fixtures "$fx" \
			--config "$cfgs/threshold-2.yaml" --count 6 --interval-ms 0 \
			--sku LOAD-FAIL --qty 1
		check_load "2 failures open it (failure_threshold: 2)" \
			--statuses 'SOAP_FAULT*2,CIRCUIT_OPEN*4' --transition 'CLOSED>OPEN'
		run "load: --breaker-threshold overrides the file" 0 load --fixtures "$fx" \
			--config "$cfgs/threshold-2.yaml" --breaker-threshold 3 --count 6 \
			--interval-ms 0 --sku LOAD-FAIL --qty 1
		check_load "3 failures open it" --statuses 'SOAP_FAULT*3,CIRCUIT_OPEN*3' \
			--transition 'CLOSED>OPEN'
		run "load: per_operation scope" 0 load --fixtures "$fx" \
			--config "$cfgs/trip-on-first-per-op.yaml" --count 3 --interval-ms 0 \
			--sku LOAD-FAIL --qty 1
		check_load "SubmitOrder's breaker opens on the first failure" \
			--statuses 'SOAP_FAULT,CIRCUIT_OPEN*2' --transition 'CLOSED>OPEN'
	fi
	;;

health)
	need_python
	ops=wms.SubmitOrder,wms.GetOrderStatus,wms.CancelOrder,wms.GetStockLevel
	run "health, nothing called yet" 0 health --fixtures "$fx"
	check_health "UP, one breaker, zero counts" --status UP --breakers wms
	expect_empty err
	run "health --prometheus" 0 health --fixtures "$fx" --prometheus
	expect out '^# TYPE fulfillment_circuit_breaker_state gauge$' "the state gauge"
	expect out '^fulfillment_circuit_breaker_state\{breaker="wms"\} 0$' "closed: 0"
	expect out '^fulfillment_circuit_breaker_calls_total\{breaker="wms",kind="permitted"\} 0$' \
		"the call counters"
	run "scope per_operation" 0 health --fixtures "$fx" --config "$cfgs/per-operation.yaml"
	check_health "four breakers, one per operation" --status UP --breakers "$ops"
	run "--probe through the GetStockLevel breaker" 0 health --fixtures "$fx" \
		--config "$cfgs/per-operation.yaml" --probe
	check_health "the probe counted by GetStockLevel's breaker only" --status UP \
		--breakers "$ops" --calls wms.GetStockLevel:permitted=1,successes=1
	expect_empty err
	run "--probe --sku nothing answers: UP, the probe's exit code" 9 health --fixtures "$fx" \
		--probe --sku SKU-NOPE
	expect err '^wmsctl: HEALTH: FIXTURE: ' "the probe's error on one line"
	check_health "the document still printed (permit handed back)" --status UP --breakers wms
	# nothing listens on 127.0.0.1:1: the probe fails with CONNECT
	E1=http://127.0.0.1:1/wms
	run "probe refused, 5 failures to open: UP, exit 4" 4 health --endpoint $E1 --probe
	expect err '^wmsctl: HEALTH: CONNECT: .*\(delivery NOT_SENT, cause REFUSED\)$' "says why"
	check_health "one failure counted, still closed" --status UP --breakers wms \
		--calls wms:permitted=1,failures=1
	run "probe refused, 1 failure opens it: DOWN" 11 health --endpoint $E1 --probe \
		--config "$cfgs/trip-on-first.yaml"
	check_health "the one breaker OPEN" --status DOWN --breakers wms --state wms=OPEN \
		--calls wms:permitted=1,failures=1
	run "... per operation: DEGRADED" 10 health --endpoint $E1 --probe \
		--config "$cfgs/trip-on-first-per-op.yaml"
	check_health "GetStockLevel's breaker OPEN, the others closed" --status DEGRADED \
		--breakers "$ops" --state wms.GetStockLevel=OPEN \
		--calls wms.GetStockLevel:permitted=1,failures=1
	run "... as Prometheus text: same exit code" 11 health --endpoint $E1 --probe \
		--config "$cfgs/trip-on-first.yaml" --prometheus
	expect out '^fulfillment_circuit_breaker_state\{breaker="wms"\} 1$' "open: 1"
	# 600 s less the time since it opened (valgrind is slow): 590-600
	expect out '^fulfillment_circuit_breaker_retry_after_seconds\{breaker="wms"\} (600|59[0-9](\.[0-9]+)?)$' \
		"retry after about 600 s"
	run "health --sku without --probe" 2 health --fixtures "$fx" --sku SKU-1
	expect err 'needs --probe' "says --sku goes with --probe"
	run "health, two probe SKUs" 2 health --fixtures "$fx" --probe --sku A --sku B
	run "health --prometheus=yes" 2 health --fixtures "$fx" --prometheus=yes
	run "health without an endpoint" 2 health
	run "health --count" 2 health --fixtures "$fx" --count 3
	run "health, a stray argument" 2 health --fixtures "$fx" extra
	if [ -w /dev/full ]; then
		$vg "$wmsctl" health --fixtures "$fx" >/dev/full 2>"$tmp/err"
		got=$?
		if [ "$got" -eq 1 ]; then ok "health: stdout that cannot be written: exit 1"; else
			not_ok "health: stdout that cannot be written" "exit $got, expected 1"; fi
	fi
	;;

tuner)
	need_python
	# Seed 002's lab through `wmsctl breaker-sim`. Calls once a second from
	# 1 s to 40 s; outage-15s.csv fails 11-25 s (3000 ms each), the rest
	# take 50 ms. Window 10 calls, minimum 10, open 5 s, 3 trials unless said.
	# The expectations below follow from those rules (examples/lab/README.md):
	#
	# default, 50 %: at 15 s the window (6-15 s) holds 5 failures = 50 %: OPEN
	# until 20 s; 16-19 s rejected. 20 s: HALF_OPEN, trials 20, 21, 22 s all
	# fail: OPEN at 22 s until 27 s; 23-26 s rejected. 27 s: HALF_OPEN, the
	# outage is over: 27, 28, 29 s succeed, CLOSED at 29 s. Made: 24 ok x 50
	# + 8 failures x 3000 = 25200 ms; all 40: 25 x 50 + 15 x 3000 = 46250.
	run "lab: default settings" 0 breaker-sim --config "$lab/default.yaml" \
		"$lab/outage-15s.csv"
	check_sim "CLOSED > OPEN > HALF_OPEN > OPEN > HALF_OPEN > CLOSED; 16-19, 23-26 s rejected" \
		"$lab/outage-15s.csv" --transitions CLOSED,OPEN,HALF_OPEN,OPEN,HALF_OPEN,CLOSED \
		--times 15000,20000,22000,27000,29000 --rejected 16000-19000,23000-26000 \
		--counts calls=40,permitted=32,rejected=8,successes=24,failures=8,ignored=0,slow=0 \
		--waiting 25200 --without 46250
	expect_empty err
	# the issue's example line, verbatim
	expect out '^\{"t_ms":16000,"permitted":false,"state":"OPEN"\}$' "the call at 16 s"
	# without a breaker (a window of 100 never fills in 40 calls): all 15
	# outage calls wait 3 s = the default run's waiting_ms_without_breaker
	run "lab: without a circuit breaker" 0 breaker-sim --config "$lab/no-breaker.yaml" \
		"$lab/outage-15s.csv"
	check_sim "never opens; every call waits: 46250 ms" "$lab/outage-15s.csv" \
		--transitions CLOSED --times '' --rejected '' \
		--counts permitted=40,rejected=0,successes=25,failures=15 \
		--waiting 46250 --without 46250
	# 30 %: 11, 12, 13 s fail = 3 of 10: OPEN at 13 s, two calls sooner;
	# 14-17 rejected; trials 18-20 fail: OPEN at 20; 21-24 rejected; trials
	# 25 (fails: the outage's last second), 26, 27 = 1 of 3 = 33 % >= 30 %:
	# OPEN at 27; 28-31 rejected; trials 32-34 succeed: CLOSED at 34 s.
	# Made: 21 ok, 7 failed: 21 x 50 + 7 x 3000 = 22050 ms.
	run "lab: lower the threshold (30 %)" 0 breaker-sim --config "$lab/low-threshold.yaml" \
		"$lab/outage-15s.csv"
	check_sim "opens at the 13th call, sooner" "$lab/outage-15s.csv" \
		--transitions CLOSED,OPEN,HALF_OPEN,OPEN,HALF_OPEN,OPEN,HALF_OPEN,CLOSED \
		--times 13000,18000,20000,25000,27000,32000,34000 \
		--rejected 14000-17000,21000-24000,28000-31000 \
		--counts permitted=28,rejected=12,successes=21,failures=7 --waiting 22050
	# open 10 s: OPEN at 15 s until 25 s, 16-24 rejected; one trial in the
	# outage (25 s) instead of the default's three; 25-27 = 1 of 3 = 33 %
	# < 50 %: CLOSED at 27 s. Made: 25 ok, 6 failed = 19250 ms.
	run "lab: a long open duration (10 s)" 0 breaker-sim --config "$lab/long-open.yaml" \
		"$lab/outage-15s.csv"
	check_sim "fewer trial calls" "$lab/outage-15s.csv" \
		--transitions CLOSED,OPEN,HALF_OPEN,CLOSED --times 15000,25000,27000 \
		--rejected 16000-24000 --counts permitted=31,rejected=9,successes=25,failures=6 \
		--waiting 19250
	# 5 s outage (11-15 s), 80 %: at most 5 failures in 10 = 50 %: never opens.
	run "lab: a short outage (5 s, 80 %)" 0 breaker-sim --config "$lab/short-outage.yaml" \
		"$lab/outage-5s.csv"
	check_sim "never opens" "$lab/outage-5s.csv" --transitions CLOSED --times '' \
		--rejected '' --counts permitted=40,successes=35,failures=5 \
		--waiting 16750 --without 16750
	# the same log on stdin: "-" or no argument
	run_in="$lab/outage-15s.csv"
	run "the log on stdin (-)" 0 breaker-sim --config "$lab/default.yaml" -
	check_sim "same run" "$lab/outage-15s.csv" --transitions CLOSED,OPEN,HALF_OPEN,OPEN,HALF_OPEN,CLOSED
	run "the log on stdin (no argument)" 0 breaker-sim --config="$lab/default.yaml"
	check_sim "same run" "$lab/outage-15s.csv" --rejected 16000-19000,23000-26000
	run_in=/dev/null

	# an SLA file without a circuit_breaker block: the library defaults
	# (consecutive, 5 failures, open 30 s)
	printf '0,fail,10\n1000,fail,10\n2000,fail,10\n3000,fail,10\n4000,fail,10\n5000,ok,10\n34000,ok,10\n' \
		>"$tmp/five.csv"
	run "no circuit_breaker block: library defaults" 0 breaker-sim \
		--config "$cfgs/no-breaker-block.yaml" "$tmp/five.csv"
	check_sim "the 5th failure opens it for 30 s" "$tmp/five.csv" \
		--transitions CLOSED,OPEN,HALF_OPEN,CLOSED --times 4000,34000,34000 --rejected 5000
	run "no --config at all: the same" 0 breaker-sim "$tmp/five.csv"
	check_sim "the same" "$tmp/five.csv" --times 4000,34000,34000
	run "--breaker-threshold and --open-ms override the file" 0 breaker-sim \
		--config "$cfgs/threshold-2.yaml" --breaker-threshold 3 --open-ms 1000 "$tmp/five.csv"
	# consecutive mode: 3 failures open it at 2 s for 1 s; the probes at 3 s
	# (exactly the end) and 4 s fail and reopen it; the probe at 5 s closes it
	check_sim "3 failures open it for 1 s; probes at 3, 4 s fail, at 5 s succeeds" \
		"$tmp/five.csv" --transitions CLOSED,OPEN,HALF_OPEN,OPEN,HALF_OPEN,OPEN,HALF_OPEN,CLOSED \
		--times 2000,3000,3000,4000,4000,5000,5000 --rejected ''
	# slow calls are judged by duration_ms (slower than 1000 ms, 50 % of 4)
	printf '0,ok,1000\n100,ok,1001\n200,ok,10\n300,ok,2500\n400,ok,5\n' >"$tmp/slow.csv"
	run "slow calls" 0 breaker-sim --config "$cfgs/slow-calls.yaml" "$tmp/slow.csv"
	check_sim "2 of 4 slower than 1 s open it" "$tmp/slow.csv" --transitions CLOSED,OPEN \
		--times 300 --counts slow=2,successes=4,rejected=1 --waiting 4511
	# a log whose file name starts with '-', after --
	cp "$tmp/five.csv" "$tmp/-five.csv"
	(cd "$tmp" && $vg "$wmsctl" breaker-sim -- -five.csv >"$tmp/out" 2>"$tmp/err")
	got=$?
	if [ "$got" -eq 0 ]; then ok "breaker-sim -- -five.csv (exit 0)"; else
		not_ok "breaker-sim -- -five.csv" "exit $got, expected 0"; fi
	check_sim "read it" "$tmp/five.csv" --times 4000,34000,34000
	printf '# comment\n\n1000,ok,50\n2000,ok\n1999,fail,3000\n' >"$tmp/back.csv"
	run "t_ms going back" 2 breaker-sim "$tmp/back.csv"
	expect err "^wmsctl: breaker-sim: .*back\\.csv: line 5: t_ms 1999 is before the previous call's 2000 \\(the log must be in time order\\)$" \
		"names the line"
	expect_empty out
	printf '1000,ok,50\n2000,timeout,3000\n' >"$tmp/bad.csv"
	run "an unknown outcome" 2 breaker-sim "$tmp/bad.csv"
	expect err "line 2: outcome 'timeout': expected ok, fail or ignore$" "names the line and value"
	expect_empty out
	printf '1000,ok,50\n2000,ok,50,7\n' >"$tmp/bad.csv"
	run "a fourth field" 2 breaker-sim "$tmp/bad.csv"
	expect err "line 2: expected t_ms,outcome\\[,duration_ms\\]: too many fields$" "too many fields"
	printf '1000,ok,abc\n' >"$tmp/bad.csv"
	run "a bad duration" 2 breaker-sim "$tmp/bad.csv"
	expect err "line 1: duration_ms 'abc': expected milliseconds 0-3600000" "bad duration"
	run "a log that does not exist" 2 breaker-sim "$tmp/none.csv"
	expect err "^wmsctl: breaker-sim: .*none\\.csv: No such file or directory$" "says so"
	run "a directory as the log" 2 breaker-sim "$tmp"
	expect err "cannot read" "cannot read it"
	run "two logs" 2 breaker-sim "$tmp/five.csv" "$tmp/five.csv"
	expect err "unexpected argument" "refuses the second"
	run "--endpoint does not apply" 2 breaker-sim --endpoint http://127.0.0.1:1/ "$tmp/five.csv"
	expect err "does not apply to breaker-sim" "says so"
	run "--fixtures does not apply" 2 breaker-sim --fixtures "$fx" "$tmp/five.csv"
	run "--open-ms above the file's max_open_duration_ms" 2 breaker-sim \
		--config "$cfgs/threshold-2.yaml" --open-ms 600001 "$tmp/five.csv"
	expect err "do not go together" "says the settings clash"
	expect_empty out
	run "a bad SLA file" 2 breaker-sim --config "$cfgs/bad-rate.yaml" "$tmp/five.csv"
	expect err 'bad-rate\.yaml:3: circuit_breaker\.failure_rate_threshold' "file, line, key"
	run "an empty log" 0 breaker-sim /dev/null
	expect_out_is '{"summary":{"transitions":["CLOSED"],"transition_times_ms":[],"permitted":0,"rejected":0,"successes":0,"failures":0,"ignored":0,"slow":0,"waiting_ms":0,"waiting_ms_without_breaker":0,"calls":0}}' \
		"just the summary"
	if [ -w /dev/full ]; then
		$vg "$wmsctl" breaker-sim "$lab/outage-15s.csv" >/dev/full 2>"$tmp/err"
		got=$?
		if [ "$got" -eq 1 ]; then ok "breaker-sim: stdout that cannot be written: exit 1"; else
			not_ok "breaker-sim: stdout that cannot be written" "exit $got, expected 1"; fi
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
	# call: an operation libwms does not model (LIVE-3 is RECEIVED: not shipped)
	ship_body LIVE-3 "$tmp/ship.xml"
	for v in --soap11 --soap12; do
		run "call GetShipmentStatus $v" 0 call $v --endpoint "$url" $SHIP \
			--body "$tmp/ship.xml" --idempotent --reply-element GetShipmentStatusResponse \
			--reply-namespace urn:libwms:warehouse:1
		expect out '^  <wh:state>NOT_SHIPPED</wh:state>$' "NOT_SHIPPED"
		expect out '^  <wh:clientOrderId>LIVE-3</wh:clientOrderId>$' "for the order asked"
	done
	ship_body LIVE-NOPE "$tmp/nope.xml"
	run "call: unknown order" 6 call --endpoint "$url" $SHIP --body "$tmp/nope.xml"
	expect err '^wmsctl: CALL: SOAP_FAULT: .*fault Client, wms_code UNKNOWN_ORDER, http 500\)$' \
		"the sim's UNKNOWN_ORDER"
	expect_empty out
	printf 'not <xml' >"$tmp/bad.xml"
	cp "$tmp/ship.xml" "$tmp/big.xml"
	pad_to "$tmp/big.xml" 1048577
	for b in bad big none; do
		run "call: --body $b.xml" 2 call --endpoint "$url" $SHIP --body "$tmp/$b.xml"
	done
	if command -v curl >/dev/null 2>&1; then
		if curl -s "${url%/wms}/stats" | grep -q '"GetShipmentStatus":3[,}]'; then
			ok "the sim got the 3 good calls, none of the bad bodies"
		else
			not_ok "the sim got the 3 good calls, none of the bad bodies" \
				"$(curl -s "${url%/wms}/stats")"
		fi
	fi
	if [ "$python" != none ]; then
		run "load" 0 load --endpoint "$url" --count 5 --interval-ms 0 \
			--call-log "$tmp/log"
		check_load "5 orders accepted" --statuses 'OK*5' --call-log "$tmp/log" \
			--outcomes 'ok*5'
		run "its call log replays" 0 breaker-sim "$tmp/log"
		check_sim "5 ok, closed" "$tmp/log" --transitions CLOSED --counts successes=5
		# --concurrency: the asynchronous API from one thread
		run "load --concurrency 1" 0 load --endpoint "$url" --count 20 --interval-ms 0 \
			--concurrency 1 --order-prefix LIVE-C1
		check_load "20 accepted, one at a time, in order, 1 thread" --concurrency 1 \
			--statuses 'OK*20' --max-in-flight 1 --threads 1
		run "load --concurrency 50" 0 load --endpoint "$url" --count 200 --interval-ms 0 \
			--concurrency 50 --order-prefix LIVE-C50
		check_load "200 accepted, 50 in flight at once, 1 thread" --concurrency 50 \
			--statuses 'OK*200' --max-in-flight 50 --threads 1
	fi
	run "health --probe" 0 health --endpoint "$url" --probe --config "$cfgs/per-operation.yaml"
	if [ "$python" != none ]; then
		check_health "UP, the probe a success" --status UP \
			--breakers wms.SubmitOrder,wms.GetOrderStatus,wms.CancelOrder,wms.GetStockLevel \
			--calls wms.GetStockLevel:permitted=1,successes=1
	fi
	stop_sim

	# every 2nd request a Server fault: load's breaker (5 in a row) stays
	# closed; its log replayed with a threshold of 1 opens at the 2nd call
	start_sim --fault every-nth --fault-param 2
	if [ "$python" != none ]; then
		run "load, every 2nd call failing" 0 load --endpoint "$url" --count 6 \
			--interval-ms 0 --call-log "$tmp/log"
		check_load "alternating" --statuses 'OK,SOAP_FAULT,OK,SOAP_FAULT,OK,SOAP_FAULT' \
			--call-log "$tmp/log" --outcomes 'ok,fail,ok,fail,ok,fail'
		run "replayed with --breaker-threshold 1" 0 breaker-sim --breaker-threshold 1 \
			--open-ms 600000 "$tmp/log"
		check_sim "open at the first failure, the rest rejected" "$tmp/log" \
			--transitions CLOSED,OPEN --counts permitted=2,rejected=4,successes=1,failures=1
	fi
	stop_sim

	start_sim --fault server-fault --fault-op GetStockLevel
	run "health --probe, GetStockLevel failing, 1 failure opens" 10 health --endpoint "$url" \
		--probe --config "$cfgs/trip-on-first-per-op.yaml"
	expect err '^wmsctl: HEALTH: SOAP_FAULT: .*fault Server' "the probe's fault"
	if [ "$python" != none ]; then
		check_health "DEGRADED: GetStockLevel open" --status DEGRADED \
			--breakers wms.SubmitOrder,wms.GetOrderStatus,wms.CancelOrder,wms.GetStockLevel \
			--state wms.GetStockLevel=OPEN --calls wms.GetStockLevel:permitted=1,failures=1
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

	# 100 calls of 200 ms each: 20 s one after another, 2 rounds of 50 at once
	start_sim --fault slow --fault-param 200
	if [ "$python" != none ]; then
		run "load --concurrency 50, WMS slow (200 ms)" 0 load --endpoint "$url" \
			--count 100 --interval-ms 0 --concurrency 50
		check_load "the calls overlapped: well under 20 s" --concurrency 50 \
			--statuses 'OK*100' --max-in-flight 50 --threads 1 --max-wall-ms 10000
		if command -v curl >/dev/null 2>&1; then
			if curl -s "${url%/wms}/stats" | grep -q '"SubmitOrder":100[,}]'; then
				ok "the sim got the 100 SubmitOrder calls"
			else
				not_ok "the sim got the 100 SubmitOrder calls" \
					"$(curl -s "${url%/wms}/stats")"
			fi
		fi
	fi
	stop_sim

	start_sim --fault hang
	run "WMS hangs: deadline" 5 submit --endpoint "$url" --order-id LIVE-5 --sku SKU-1 \
		--qty 1 --timeout-ms 300
	expect err '^wmsctl: SUBMIT: TIMEOUT: .*\(delivery UNKNOWN, cause TIMEOUT\)$' "TIMEOUT, delivery unknown"
	stop_sim
	;;

health-listen)
	# load --health-listen: refused before anything is sent when the address
	# is bad or taken; served for the run, watched here as a person would
	LF="--fixtures $fx --count 1 --interval-ms 0 --sku LOAD-OK --qty 1"
	for bad in 127.0.0.1 127.0.0.1:65536 127.0.0.1:http localhost:9464 ::1:9464; do
		run "load --health-listen $bad" 2 load $LF --health-listen "$bad"
		expect err "^wmsctl: load: --health-listen: health server: listen address '$bad': " \
			"says what is wrong with '$bad'"
		expect_empty out
	done
	run "load --health-listen ''" 2 load $LF --health-listen ""
	run "load --health-listen with port 0" 2 load $LF --health-listen 127.0.0.1:0
	expect err "give a port 1-65535" "asks for a port a person can find"
	run "help load" 0 help load
	expect out -- '--health-listen ADDR:PORT' "load's help documents --health-listen"
	expect out 'Exit 2, nothing sent' "and its exit code"
	if [ "$python" = none ]; then
		echo "# python3 not found: the served endpoint is not checked"
	else
		# a free port: bound by the kernel's choice, then let go
		port=$("$python" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
		rm -f "$tmp/out" "$tmp/err"
		$vg "$wmsctl" load --fixtures "$fx" --count 100000 --interval-ms 20 --sku LOAD-FAIL \
			--qty 1 --breaker-threshold 2 --open-ms 600000 \
			--health-listen "127.0.0.1:$port" >"$tmp/out" 2>"$tmp/err" &
		pid=$!
		i=0
		while ! grep -q '^health endpoint: ' "$tmp/err" 2>/dev/null && [ $i -lt 1200 ]; do
			sleep 0.05
			i=$((i + 1))
		done
		expect err "^health endpoint: http://127.0.0.1:$port/health and /metrics\$" \
			"stderr says where"
		# the breaker opens after two failures: /health turns 503 DOWN
		if "$python" - "$port" >"$tmp/check" 2>&1 <<'PY'
import sys, time, urllib.request, urllib.error
base = "http://127.0.0.1:%s" % sys.argv[1]
def get(path):
    try:
        with urllib.request.urlopen(base + path, timeout=30) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()
for _ in range(1200):
    code, ctype, body = get("/health")
    if code == 503:
        break
    time.sleep(0.05)
assert code == 503 and ctype == "application/json", (code, ctype, body)
assert body.startswith('{"status":"DOWN","breakers":[{"name":"wmsctl-load","state":"OPEN"'), body
code, ctype, body = get("/metrics")
assert code == 200 and ctype == "text/plain; version=0.0.4; charset=utf-8", (code, ctype)
assert 'fulfillment_circuit_breaker_state{breaker="wmsctl-load"} 1\n' in body, body
PY
		then ok "/health 503 DOWN and /metrics state 1 once the breaker opens"
		else not_ok "/health and /metrics while it runs" "$(cat "$tmp/check")"; fi
		# the port is taken while it runs
		env $vg "$wmsctl" load $LF --health-listen "127.0.0.1:$port" >"$tmp/out2" 2>"$tmp/err2"
		got=$?
		if [ "$got" -eq 2 ] && [ ! -s "$tmp/out2" ] &&
			grep -q "cannot listen on 127.0.0.1:$port: Address already in use" "$tmp/err2"; then
			ok "a second load on the same port: exit 2, nothing sent, says why"
		else
			not_ok "a second load on the same port" "exit $got: $(cat "$tmp/err2")"
		fi
		sigterm_load $pid
		# stopped with the run: nothing listens on the port any more
		if "$python" -c 'import socket, sys
s = socket.socket()
sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) != 0 else 1)' "$port"; then
			ok "the endpoint is gone after the run"
		else
			not_ok "the endpoint is gone after the run"
		fi
		# the SLA file can name it; the flag wins over the file
		printf 'client:\n  health_listen: "127.0.0.1:%s"\n' "$port" >"$tmp/health.yaml"
		run "load --config with client.health_listen" 0 load $LF --config "$tmp/health.yaml"
		expect err "^health endpoint: http://127.0.0.1:$port/health and /metrics\$" \
			"the SLA file's client.health_listen is served"
		port2=$("$python" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
		run "load --config and --health-listen" 0 load $LF --config "$tmp/health.yaml" \
			--health-listen "127.0.0.1:$port2"
		expect err "^health endpoint: http://127.0.0.1:$port2/health and /metrics\$" \
			"--health-listen wins over the file"
	fi
	;;

shared)
	# The fleet's shared breaker (circuit_breaker.shared) from the shell:
	# `breaker` changes it by hand, every other wmsctl process (each a
	# replica of its own) sees it. redis-server on a unix socket of $tmp,
	# stopped by its PID.
	need_python
	if ! command -v redis-server >/dev/null 2>&1; then
		echo "1..0 # SKIP redis-server not found (./run installs it)"
		rm -rf "$tmp"
		exit 0
	fi
	redis-server --port 0 --unixsocket "$tmp/r.sock" --save '' --appendonly no \
		>"$tmp/redis.log" 2>&1 &
	redis_pid=$!
	# (killed below by its PID; a meson timeout killing this script leaves
	# it running: no trap, as said at the top)
	i=0
	while [ ! -S "$tmp/r.sock" ] && [ $i -lt 200 ] && kill -0 $redis_pid 2>/dev/null; do
		sleep 0.05
		i=$((i + 1))
	done
	if [ ! -S "$tmp/r.sock" ]; then
		echo "Bail out! redis-server did not start: $(tail -n 3 "$tmp/redis.log")"
		kill $redis_pid 2>/dev/null
		rm -rf "$tmp"
		exit 1
	fi
	# one failure opens it, for 10 minutes; a fleet of its own per file; a
	# command timeout of 2 s, not 100 ms: under valgrind on a loaded
	# machine a slow reply would give the store up (losing Redis is the
	# down.yaml cases' scenario, not these)
	printf 'circuit_breaker:\n  failure_threshold: 1\n  open_duration_ms: 600000\n  shared:\n    redis_url: unix://%s\n    name: %s\n    command_timeout_ms: 2000\n' \
		"$tmp/r.sock" one >"$tmp/one.yaml"
	printf 'circuit_breaker:\n  scope: per_operation\n  shared:\n    redis_url: unix://%s\n    name: %s\n    command_timeout_ms: 2000\n' \
		"$tmp/r.sock" perop >"$tmp/perop.yaml"
	printf 'circuit_breaker:\n  shared:\n    redis_url: unix://%s\n' "$tmp/nothing-here.sock" \
		>"$tmp/down.yaml"
	# the store's join, scaled like every wait here (valgrind: 5 times)
	W="--store-wait-ms $((5000 * scale))"
	S="--config $tmp/one.yaml $W"

	run "breaker force-open" 0 breaker force-open $S
	check_health "read back: FORCED_OPEN, retry after open_duration_ms" --status DOWN \
		--breakers wms --state wms=FORCED_OPEN
	expect out '"retry_after_ms":600000,' "the hint is the open duration"
	expect out '"store":"CONNECTED"' "read from Redis"
	expect_empty err
	run "breaker force-open again" 0 breaker force-open $S
	check_health "still FORCED_OPEN" --status DOWN --breakers wms --state wms=FORCED_OPEN
	run "health, another process: DOWN" 11 health $S --endpoint $E
	check_health "the fleet's FORCED_OPEN" --status DOWN --breakers wms --state wms=FORCED_OPEN
	expect_empty err
	run "submit while forced open: refused, nothing sent" 3 submit $S --endpoint $E $ORDER
	expect err '^wmsctl: SUBMIT: CIRCUIT_OPEN: .*\(delivery NOT_SENT, retry after 600000 ms\)$' \
		"CIRCUIT_OPEN, not CONNECT: the endpoint was never tried"
	run "breaker disable" 0 breaker disable $S
	check_health "DISABLED: UP" --status UP --breakers wms --state wms=DISABLED
	run "submit while disabled: let through (refused endpoint)" 4 submit $S --endpoint $E $ORDER
	run "... and again: a disabled breaker never opens" 4 submit $S --endpoint $E $ORDER
	run "breaker reset" 0 breaker reset $S
	check_health "CLOSED" --status UP --breakers wms
	run "submit, refused endpoint: the fleet's breaker opens on it" 4 submit $S --endpoint $E \
		$ORDER
	run "health, another process: OPEN" 11 health $S --endpoint $E
	check_health "the fleet's OPEN" --status DOWN --breakers wms --state wms=OPEN
	run "submit while open" 3 submit $S --endpoint $E $ORDER
	run "breaker force-closed" 0 breaker force-closed $S
	check_health "CLOSED again" --status UP --breakers wms
	run "breaker reset twice" 0 breaker reset $S
	run "... the second" 0 breaker reset $S
	check_health "CLOSED" --status UP --breakers wms

	ops=wms.SubmitOrder,wms.GetOrderStatus,wms.CancelOrder,wms.GetStockLevel
	P="--config $tmp/perop.yaml $W"
	run "breaker force-open --breaker wms.GetStockLevel" 0 breaker force-open $P \
		--breaker wms.GetStockLevel
	check_health "that one FORCED_OPEN, the others closed" --status DEGRADED --breakers "$ops" \
		--state wms.GetStockLevel=FORCED_OPEN
	run "stock: its breaker is forced open" 3 stock $P --endpoint $E --sku SKU-1
	run "status: its breaker is closed (refused endpoint)" 4 status $P --endpoint $E \
		--order-id A
	run "breaker disable, every breaker of the file" 0 breaker disable $P
	check_health "all DISABLED" --status UP --breakers "$ops" --state wms.SubmitOrder=DISABLED \
		--state wms.GetOrderStatus=DISABLED --state wms.CancelOrder=DISABLED \
		--state wms.GetStockLevel=DISABLED
	run "breaker --breaker that the file does not give" 2 breaker reset $P --breaker wms
	expect err "^wmsctl: breaker: --breaker 'wms': no such breaker; the SLA file gives wms.SubmitOrder, wms.GetOrderStatus, wms.CancelOrder, wms.GetStockLevel\$" \
		"names the breakers there are"
	expect_empty out

	run "breaker, Redis not there" 4 breaker force-open --config "$tmp/down.yaml" \
		--store-wait-ms 300
	expect err '^wmsctl: breaker: CONNECT: the shared breakers did not join Redis within 300 ms: nothing was changed$' \
		"says nothing was changed"
	expect_empty out
	run "submit, Redis not there: this process's breaker decides" 4 submit \
		--config "$tmp/down.yaml" --endpoint $E $ORDER
	expect err "^wmsctl: submit: the shared breaker has not joined Redis: this process's own breaker decides\$" \
		"says so"
	expect err '^wmsctl: SUBMIT: CONNECT: ' "then the call's own error"

	run "breaker without an action" 2 breaker $S
	expect err 'say what to do: force-open, force-closed, disable or reset' "lists the actions"
	run "breaker open (not an action)" 2 breaker open $S
	run "breaker, two actions" 2 breaker reset disable $S
	run "breaker without --config" 2 breaker reset
	run "breaker, an SLA file without a shared block" 2 breaker reset \
		--config "$cfgs/per-operation.yaml"
	expect err 'has no circuit_breaker.shared block' "says what is missing"
	run "breaker --endpoint (not its option)" 2 breaker reset $S --endpoint $E
	run "breaker --store-wait-ms 0" 2 breaker reset --config "$tmp/one.yaml" --store-wait-ms 0
	run "help breaker" 0 help breaker
	expect out '^  force-open ' "documents force-open"
	expect out '^  4  Redis did not answer' "and its exit codes"

	kill $redis_pid
	wait $redis_pid 2>/dev/null
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
