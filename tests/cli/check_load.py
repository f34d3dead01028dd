#!/usr/bin/env python3
"""Check the output of `wmsctl load`: one JSON object per call, then one
summary object, all consistent with each other (and with --call-log).

usage: check_load.py OUTPUT [--statuses OK*3,CIRCUIT_OPEN*2] [--transition CLOSED>OPEN]
                            [--has-transition OPEN>HALF_OPEN ...]
                            [--call-log FILE --outcomes ok*3] [--min-t-ms SEQ:MS]
                            [--concurrency N [--max-in-flight M] [--threads T]
                             [--max-wall-ms MS]]
With --concurrency (load --concurrency N) the lines come in completion
order: their seqs must be 1..calls once each (in order when N is 1),
--statuses is compared as counts, and the summary must say N, the most
calls in flight at once (at most N; exactly M with --max-in-flight) and the
threads (exactly T with --threads).
Exits 1 with one line saying what is wrong.
"""
import argparse
import collections
import json
import re
import sys

CALL_KEYS = ["seq", "t_ms", "status", "delivery", "breaker", "latency_ms"]
CALL_OPTIONAL = {"message", "retry_after_ms", "fault_code", "wms_code", "http_status"}
SUMMARY_KEYS = {"calls", "ok", "failed", "rejected", "by_status", "transitions", "wall_ms",
                "time_waiting_ms"}
STATUSES = {"OK", "INVALID_ARG", "NOMEM", "CIRCUIT_OPEN", "CONNECT", "TIMEOUT", "TRANSPORT",
            "HTTP", "SOAP_FAULT", "NOT_XML", "TRUNCATED", "UNEXPECTED_REPLY", "TOO_LARGE",
            "UNSAFE_XML", "TLS", "FIXTURE", "CONFIG", "INTERNAL", "BULKHEAD_FULL", "CANCELLED"}
DELIVERIES = {"NOT_SENT", "UNKNOWN", "ANSWERED"}
STATES = {"CLOSED", "OPEN", "HALF_OPEN", "DISABLED", "FORCED_OPEN"}


def fail(msg):
    print("check_load: " + msg)
    sys.exit(1)


def expand(spec):
    """'OK*2,CIRCUIT_OPEN' -> ['OK', 'OK', 'CIRCUIT_OPEN']"""
    out = []
    for item in spec.split(","):
        name, _, n = item.partition("*")
        out += [name] * (int(n) if n else 1)
    return out


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("--statuses")
    ap.add_argument("--transition")
    ap.add_argument("--has-transition", action="append", default=[])
    ap.add_argument("--call-log")
    ap.add_argument("--outcomes")
    ap.add_argument("--min-t-ms", action="append", default=[])
    ap.add_argument("--concurrency", type=int)
    ap.add_argument("--max-in-flight", type=int)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--max-wall-ms", type=int)
    a = ap.parse_args()
    concurrent = a.concurrency is not None

    with open(a.output, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if len(lines) < 2:
        fail("expected call lines and a summary, got %d line(s)" % len(lines))
    calls = []
    for i, text in enumerate(lines[:-1], 1):
        try:
            obj = json.loads(text, object_pairs_hook=collections.OrderedDict)
        except ValueError as e:
            fail("line %d is not JSON (%s): %s" % (i, e, text))
        keys = list(obj)
        if keys[:len(CALL_KEYS)] != CALL_KEYS or not set(keys[len(CALL_KEYS):]) <= CALL_OPTIONAL:
            fail("line %d: keys %s" % (i, keys))
        if not is_int(obj["seq"]) or (obj["seq"] != i and (not concurrent or a.concurrency == 1)) \
           or not is_int(obj["t_ms"]) or obj["t_ms"] < 0:
            fail("line %d: seq/t_ms wrong: %s" % (i, text))
        if not concurrent and calls and obj["t_ms"] < calls[-1]["t_ms"]:
            fail("line %d: t_ms goes back" % i)
        if obj["status"] not in STATUSES or obj["delivery"] not in DELIVERIES or \
           obj["breaker"] not in STATES:
            fail("line %d: unknown status, delivery or breaker state: %s" % (i, text))
        if not re.search(r'"latency_ms":\d+\.\d\d[,}]', text) or obj["latency_ms"] < 0:
            fail("line %d: latency_ms is not a number with 2 decimals: %s" % (i, text))
        if obj["status"] == "CIRCUIT_OPEN" and (obj["delivery"] != "NOT_SENT" or
                                                 not is_int(obj.get("retry_after_ms"))):
            fail("line %d: CIRCUIT_OPEN without NOT_SENT / retry_after_ms" % i)
        if obj["status"] == "OK" and keys != CALL_KEYS:
            fail("line %d: a successful call has exactly %s" % (i, CALL_KEYS))
        if obj["status"] != "OK" and "message" not in obj:
            fail("line %d: a failed call has no message" % i)
        calls.append(obj)
    if concurrent:
        # completion order: every call started (seq 1..n) has its one line,
        # and they started in seq order
        calls.sort(key=lambda c: c["seq"])
        if [c["seq"] for c in calls] != list(range(1, len(calls) + 1)):
            fail("seqs are not 1..%d once each: %s" % (len(calls), [c["seq"] for c in calls]))
        for prev, c in zip(calls, calls[1:]):
            if c["t_ms"] < prev["t_ms"]:
                fail("call %d started before call %d" % (c["seq"], prev["seq"]))

    try:
        summary = json.loads(lines[-1])["summary"]
    except (ValueError, KeyError, TypeError) as e:
        fail("last line is no summary object (%s): %s" % (e, lines[-1]))
    if not SUMMARY_KEYS <= set(summary):
        fail("summary lacks %s" % sorted(SUMMARY_KEYS - set(summary)))
    statuses = [c["status"] for c in calls]
    count = collections.Counter(statuses)
    if summary["calls"] != len(calls) or summary["ok"] != count["OK"] or \
       summary["rejected"] != count["CIRCUIT_OPEN"] or \
       summary["failed"] != len(calls) - count["OK"] - count["CIRCUIT_OPEN"]:
        fail("summary counts do not add up: %s vs %s" % (summary, dict(count)))
    if summary["by_status"] != dict(count):
        fail("by_status %s, calls say %s" % (summary["by_status"], dict(count)))
    for t in summary["transitions"]:
        if set(t) != {"t_ms", "from", "to", "reason"} or t["from"] not in STATES or \
           t["to"] not in STATES or not isinstance(t["reason"], str) or not t["reason"]:
            fail("bad transition %s" % t)
    if concurrent:
        if summary.get("concurrency") != a.concurrency:
            fail("summary concurrency %s, expected %d" % (summary.get("concurrency"),
                                                          a.concurrency))
        mif, threads = summary.get("max_in_flight"), summary.get("threads")
        if not is_int(mif) or not 1 <= mif <= a.concurrency:
            fail("max_in_flight %s is not 1..%d" % (mif, a.concurrency))
        if a.max_in_flight is not None and mif != a.max_in_flight:
            fail("max_in_flight %d, expected %d" % (mif, a.max_in_flight))
        if not is_int(threads) or threads < 1:
            fail("threads %s is not a count" % threads)
        if a.threads is not None and threads != a.threads:
            fail("threads %d, expected %d" % (threads, a.threads))
        if a.max_wall_ms is not None and summary["wall_ms"] > a.max_wall_ms:
            fail("wall_ms %d, expected at most %d" % (summary["wall_ms"], a.max_wall_ms))
    elif {"concurrency", "max_in_flight", "threads"} & set(summary):
        fail("a run without --concurrency has concurrency fields: %s" % summary)
    if not is_int(summary["wall_ms"]) or summary["wall_ms"] < calls[-1]["t_ms"] or \
       not is_int(summary["time_waiting_ms"]) or \
       summary["time_waiting_ms"] > summary["wall_ms"] + 1:
        fail("wall_ms / time_waiting_ms inconsistent: %s" % summary)
    # The breaker field is read after each call: no OPEN before a transition to it.
    first_open = next((i for i, c in enumerate(calls) if c["breaker"] == "OPEN"), None)
    if first_open is not None and not any(t["to"] == "OPEN" for t in summary["transitions"]):
        fail("calls report an OPEN breaker but no transition to OPEN was listed")

    if a.statuses and concurrent:
        if count != collections.Counter(expand(a.statuses)):
            fail("statuses %s, expected %s" % (dict(count), a.statuses))
    elif a.statuses and statuses != expand(a.statuses):
        fail("statuses %s, expected %s" % (statuses, expand(a.statuses)))
    if a.transition:
        frm, to = a.transition.split(">")
        if not summary["transitions"] or (summary["transitions"][0]["from"],
                                          summary["transitions"][0]["to"]) != (frm, to):
            fail("first transition %s, expected %s" % (summary["transitions"][:1], a.transition))
    pairs = [(t["from"], t["to"]) for t in summary["transitions"]]
    for spec in a.has_transition:
        if tuple(spec.split(">")) not in pairs:
            fail("no transition %s among %s" % (spec, pairs))
    for spec in a.min_t_ms:
        seq, ms = (int(x) for x in spec.split(":"))
        if calls[seq - 1]["t_ms"] < ms:
            fail("call %d started at %d ms, scheduled at %d" % (seq, calls[seq - 1]["t_ms"], ms))

    if a.call_log and concurrent:
        fail("load --concurrency writes no call log")
    if a.call_log:
        with open(a.call_log, encoding="utf-8") as f:
            log = f.read().splitlines()
        made = [c for c in calls if c["status"] != "CIRCUIT_OPEN"]
        if len(log) != len(made):
            fail("call log has %d lines for %d calls made" % (len(log), len(made)))
        outcomes = []
        for text, c in zip(log, made):
            m = re.fullmatch(r"(\d+),(ok|fail|ignore),(\d+\.\d\d)", text)
            if not m or int(m.group(1)) != c["t_ms"]:
                fail("call log line %r does not match call %s" % (text, c))
            outcomes.append(m.group(2))
        if a.outcomes and outcomes != expand(a.outcomes):
            fail("call log outcomes %s, expected %s" % (outcomes, expand(a.outcomes)))
    print("check_load: %d calls, summary consistent%s" % (
        len(calls), ", %d at most in flight, %d thread(s)" % (summary["max_in_flight"],
                                                              summary["threads"])
        if concurrent else ""))


if __name__ == "__main__":
    main()
