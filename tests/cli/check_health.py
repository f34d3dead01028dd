#!/usr/bin/env python3
"""Check the JSON of `wmsctl health` (wms/health.h's document).

usage: check_health.py OUTPUT --status UP|DEGRADED|DOWN --breakers NAME,NAME
                       [--state NAME=OPEN ...] [--calls NAME:permitted=1,successes=1 ...]
Breakers not named by --state must be CLOSED; counters not named by --calls
must be 0. Exits 1 with one line saying what is wrong.
"""
import argparse
import json
import sys

STATE_VALUES = {"CLOSED": 0, "OPEN": 1, "HALF_OPEN": 2, "DISABLED": 3, "FORCED_OPEN": 4}
CALL_KINDS = ["permitted", "rejected", "successes", "failures", "slow", "ignored"]


def fail(msg):
    print("check_health: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("--status", required=True)
    ap.add_argument("--breakers", required=True)
    ap.add_argument("--state", action="append", default=[])
    ap.add_argument("--calls", action="append", default=[])
    a = ap.parse_args()

    with open(a.output, encoding="utf-8") as f:
        text = f.read()
    if text.count("\n") != 1 or not text.endswith("\n"):
        fail("expected one line of JSON, got %r" % text[:200])
    try:
        doc = json.loads(text)
    except ValueError as e:
        fail("not JSON (%s): %s" % (e, text[:200]))
    if list(doc) != ["status", "breakers"] or doc["status"] != a.status:
        fail("status %s, expected %s" % (doc.get("status"), a.status))
    names = [b["name"] for b in doc["breakers"]]
    if names != a.breakers.split(","):
        fail("breakers %s, expected %s" % (names, a.breakers))
    states = dict(item.split("=") for item in a.state)
    calls = {}
    for item in a.calls:
        name, _, spec = item.partition(":")
        calls[name] = {k: int(v) for k, v in (kv.split("=") for kv in spec.split(","))}
    for b in doc["breakers"]:
        want = states.get(b["name"], "CLOSED")
        if b["state"] != want or b["state_value"] != STATE_VALUES[want]:
            fail("%s: state %s (%s), expected %s" % (b["name"], b["state"], b["state_value"],
                                                     want))
        if set(b["calls"]) != set(CALL_KINDS):
            fail("%s: calls keys %s" % (b["name"], sorted(b["calls"])))
        for kind in CALL_KINDS:
            w = calls.get(b["name"], {}).get(kind, 0)
            if b["calls"][kind] != w:
                fail("%s: calls.%s = %s, expected %s" % (b["name"], kind, b["calls"][kind], w))
        if (b["state"] in ("OPEN", "FORCED_OPEN")) != (b["retry_after_ms"] > 0):
            fail("%s: retry_after_ms %s in state %s" % (b["name"], b["retry_after_ms"],
                                                       b["state"]))
    print("check_health: %s, %d breakers" % (doc["status"], len(names)))


if __name__ == "__main__":
    main()
