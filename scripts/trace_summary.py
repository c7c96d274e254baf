#!/usr/bin/env python3
"""Where the time went, from a `--trace` file: per process, each span name's count, total
seconds and share of the process's traced time (the sum of its `epoch` spans when it has
any, else its first-to-last event); requests in flight (async spans) separately.

    python3 scripts/trace_summary.py run.json [--process 'trainer 0.0'] [--epoch N]

Only the standard library: it reads the Chrome trace-event JSON that distgraph writes.
"""
import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--process", help="only this process (its name in the trace)")
    ap.add_argument("--epoch", type=int, help="only spans inside this epoch's span")
    a = ap.parse_args()
    with open(a.trace) as f:
        events = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    by_pid = collections.defaultdict(list)
    for e in events:
        if e["ph"] != "M" and (a.process is None or names.get(e["pid"]) == a.process):
            by_pid[e["pid"]].append(e)
    if not by_pid:
        sys.exit(f"trace_summary: no events{' of ' + a.process if a.process else ''} in {a.trace}")
    for pid, evs in sorted(by_pid.items(), key=lambda kv: names.get(kv[0], "")):
        window = None
        epochs = [e for e in evs if e["ph"] == "X" and e["name"] == "epoch"]
        if a.epoch is not None:
            chosen = [e for e in epochs if e.get("args", {}).get("epoch") == a.epoch]
            if not chosen:
                continue
            window = (chosen[0]["ts"], chosen[0]["ts"] + chosen[0]["dur"])
        inside = lambda e: window is None or (window[0] <= e["ts"] <= window[1])
        spans = collections.defaultdict(lambda: [0, 0.0])
        begins, flights = {}, collections.defaultdict(lambda: [0, 0.0])
        for e in evs:
            if not inside(e):
                continue
            if e["ph"] == "X":
                spans[e["name"]][0] += 1
                spans[e["name"]][1] += e["dur"] / 1e6
            elif e["ph"] == "b":
                begins[e["id"]] = e
            elif e["ph"] == "e" and e["id"] in begins:
                b = begins.pop(e["id"])
                flights[b["name"]][0] += 1
                flights[b["name"]][1] += (e["ts"] - b["ts"]) / 1e6
        if window is not None:
            total = (window[1] - window[0]) / 1e6
        elif epochs:
            total = sum(e["dur"] for e in epochs) / 1e6
        else:
            ts = [e["ts"] for e in evs]
            total = (max(ts) - min(ts)) / 1e6
        print(f"{names.get(pid, pid)}: {total:.3f} s traced")
        for name, (n, s) in sorted(spans.items(), key=lambda kv: -kv[1][1]):
            print(f"  {name:<40} {n:>7} x {s:10.4f} s {100 * s / total if total else 0:6.1f}%")
        for name, (n, s) in sorted(flights.items(), key=lambda kv: -kv[1][1]):
            print(f"  in flight: {name:<29} {n:>7} x {s:10.4f} s")


if __name__ == "__main__":
    main()
