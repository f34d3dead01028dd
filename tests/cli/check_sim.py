#!/usr/bin/env python3
"""Check the output of `wmsctl breaker-sim`: one JSON object per call of the
call log, then one summary object, consistent with each other and with the
log; then what a test expects of it.

usage: check_sim.py OUTPUT CALLS.csv [--transitions CLOSED,OPEN,...]
                    [--times 15000,20000] [--rejected 16000-19000,23000]
                    [--counts permitted=32,rejected=8] [--waiting MS] [--without MS]
Exits 1 with one line saying what is wrong.
"""
import argparse
import collections
import json
import sys
from decimal import Decimal

CALL_KEYS = ["t_ms", "permitted", "state"]
SUMMARY_KEYS = ["transitions", "transition_times_ms", "permitted", "rejected", "successes",
                "failures", "ignored", "slow", "waiting_ms", "waiting_ms_without_breaker",
                "calls"]
STATES = {"CLOSED", "OPEN", "HALF_OPEN"}


def fail(msg):
    print("check_sim: " + msg)
    sys.exit(1)


def read_calls(path):
    """The call log, parsed independently of wmsctl: (t_ms, outcome, duration)."""
    calls = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split(",")
            calls.append((int(fields[0]), fields[1],
                          Decimal(fields[2]) if len(fields) > 2 else Decimal(0)))
    return calls


def ranges(spec):
    """'16000-19000,23000' -> {16000, 17000, 18000, 19000, 23000} (1 s steps)."""
    out = set()
    for item in filter(None, spec.split(",")):
        lo, _, hi = item.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1, 1000))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("calls")
    ap.add_argument("--transitions")
    ap.add_argument("--times")
    ap.add_argument("--rejected")
    ap.add_argument("--counts")
    ap.add_argument("--waiting")
    ap.add_argument("--without")
    a = ap.parse_args()

    log = read_calls(a.calls)
    with open(a.output, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if len(lines) != len(log) + 1:
        fail("%d lines for %d calls (+ summary)" % (len(lines), len(log)))
    out = []
    for i, text in enumerate(lines[:-1], 1):
        try:
            obj = json.loads(text, object_pairs_hook=collections.OrderedDict)
        except ValueError as e:
            fail("line %d is not JSON (%s): %s" % (i, e, text))
        if list(obj) != CALL_KEYS or not isinstance(obj["permitted"], bool) or \
           obj["state"] not in STATES:
            fail("line %d: expected %s, got %s" % (i, CALL_KEYS, text))
        if obj["t_ms"] != log[i - 1][0]:
            fail("line %d: t_ms %s, the log says %d" % (i, obj["t_ms"], log[i - 1][0]))
        out.append(obj)
    try:
        s = json.loads(lines[-1], object_pairs_hook=collections.OrderedDict,
                       parse_float=Decimal)["summary"]
    except (ValueError, KeyError, TypeError) as e:
        fail("last line is no summary object (%s): %s" % (e, lines[-1]))
    if list(s) != SUMMARY_KEYS:
        fail("summary keys %s, expected %s" % (list(s), SUMMARY_KEYS))

    # The summary agrees with the lines and with the log.
    permitted = [c["permitted"] for c in out]
    if s["calls"] != len(log) or s["permitted"] != permitted.count(True) or \
       s["rejected"] != permitted.count(False):
        fail("calls/permitted/rejected %s do not match the lines" % dict(s))
    made = [c for c, p in zip(log, permitted) if p]
    if s["successes"] != sum(1 for c in made if c[1] == "ok") or \
       s["failures"] != sum(1 for c in made if c[1] == "fail") or \
       s["ignored"] != sum(1 for c in made if c[1] == "ignore"):
        fail("successes/failures/ignored %s do not match the calls made" % dict(s))
    if Decimal(s["waiting_ms"]) != sum((c[2] for c in made), Decimal(0)):
        fail("waiting_ms %s is not the sum of the permitted calls' durations" % s["waiting_ms"])
    if Decimal(s["waiting_ms_without_breaker"]) != sum((c[2] for c in log), Decimal(0)):
        fail("waiting_ms_without_breaker %s is not the sum of all durations"
             % s["waiting_ms_without_breaker"])
    tr, times = s["transitions"], s["transition_times_ms"]
    if not tr or tr[0] != "CLOSED" or len(times) != len(tr) - 1 or times != sorted(times):
        fail("transitions %s / times %s malformed" % (tr, times))
    # Walk the transitions along the lines: each call enters the fewest states
    # that end in its line's state, all at its t_ms; a call permitted while
    # OPEN entered HALF_OPEN first; a rejected call changes nothing.
    cur = 0
    for i, c in enumerate(out, 1):
        k = 1 if c["permitted"] and tr[cur] == "OPEN" else 0
        while cur + k < len(tr) and tr[cur + k] != c["state"]:
            k += 1
        if cur + k >= len(tr):
            fail("line %d: state %s does not follow from the transitions %s"
                 % (i, c["state"], tr[:cur + 1]))
        if any(times[j - 1] != c["t_ms"] for j in range(cur + 1, cur + k + 1)):
            fail("line %d: it entered %s, but not at its t_ms %d (times %s)"
                 % (i, tr[cur + 1:cur + k + 1], c["t_ms"], times))
        if not c["permitted"] and (k or c["state"] != "OPEN"):
            fail("line %d: a rejected call, yet the state is %s" % (i, c["state"]))
        cur += k
    if cur != len(tr) - 1:
        fail("transitions %s were never entered by a call" % tr[cur + 1:])

    # What the test expects.
    if a.transitions is not None and tr != a.transitions.split(","):
        fail("transitions %s, expected %s" % (tr, a.transitions))
    if a.times is not None and times != [int(x) for x in filter(None, a.times.split(","))]:
        fail("transition_times_ms %s, expected %s" % (times, a.times))
    if a.rejected is not None:
        want = ranges(a.rejected)
        for c in out:
            if c["permitted"] == (c["t_ms"] in want):
                fail("call at %d ms: permitted=%s, expected %s"
                     % (c["t_ms"], c["permitted"], c["t_ms"] not in want))
        if not want <= {c["t_ms"] for c in out}:
            fail("expected rejections at %s, not all in the log" % sorted(want))
    for item in filter(None, (a.counts or "").split(",")):
        key, _, val = item.partition("=")
        if s[key] != int(val):
            fail("%s is %s, expected %s" % (key, s[key], val))
    if a.waiting is not None and Decimal(s["waiting_ms"]) != Decimal(a.waiting):
        fail("waiting_ms %s, expected %s" % (s["waiting_ms"], a.waiting))
    if a.without is not None and Decimal(s["waiting_ms_without_breaker"]) != Decimal(a.without):
        fail("waiting_ms_without_breaker %s, expected %s"
             % (s["waiting_ms_without_breaker"], a.without))
    print("check_sim: %d calls, %s" % (len(out), " > ".join(tr)))


if __name__ == "__main__":
    main()
