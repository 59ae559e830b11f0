#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Print where the test command's time went: scripts/test.sh records each
step (name, seconds, how busy the CPUs were, cache state) in a TSV file
and has ctest write a JUnit file per ctest call; this reads both and prints
one table.

    scripts/test-times.py STEPS.tsv [JUNIT.xml | LANE.tsv ...]

A test's line is indented under the step that ran it. A step whose cache
was cold says so: the next run on this machine will be shorter. "cpu" is
the share of the machine's CPU time (all cores) that was busy while a step
or a lane's suite ran, whoever used it: well below 100%, there was room
for more work beside it.
"""
import os
import sys
import xml.etree.ElementTree as ET


def lane_times(path):
    """[(suite, seconds, result, cpu busy %)] of a lane's TSV file (the
    unprivileged lane's, the daemon lane's)."""
    try:
        with open(path) as f:
            rows = [line.rstrip("\n").split("\t") for line in f]
    except OSError:
        return []
    return [(r[0], float(r[1]), r[2], r[3] if len(r) > 3 else "")
            for r in rows if len(r) >= 3]


def junit_times(path):
    """[(test name, seconds, result, "")] of one ctest --output-junit file."""
    if path.endswith(".tsv"):
        return lane_times(path)
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    out = []
    for case in root.iter("testcase"):
        status = case.get("status", "run")
        if case.find("failure") is not None:
            status = "FAILED"
        elif case.find("skipped") is not None or status == "notrun":
            status = "skipped"
        else:
            status = "ok" if status in ("run", "passed") else status
        out.append((case.get("name", "?"), float(case.get("time", "0") or 0), status, ""))
    return out


def fmt(seconds):
    m, s = divmod(int(round(seconds)), 60)
    return "%d:%02d" % (m, s)


def pct(busy):
    return busy + "%" if busy else ""


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    steps = []
    with open(argv[1]) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 4:
                steps.append((parts[0], float(parts[1]), parts[2], parts[3], parts[4:] or [""]))
    junit = {os.path.basename(p): junit_times(p) for p in argv[2:]}
    total = sum(s[1] for s in steps)
    print("\n==> where the time went (wall clock; total %s)" % fmt(total))
    print("%-54s %8s %4s  %s" % ("step / test", "m:ss", "cpu", "cache or result"))
    for name, secs, busy, cache, extra in steps:
        print("%-54s %8s %4s  %s" % (name[:54], fmt(secs), pct(busy), cache))
        for j in extra:
            for test, t, status, busy in sorted(junit.get(j, []), key=lambda x: -x[1]):
                if t >= 1.0 or status != "ok":
                    print("    %-50s %8s %4s  %s" % (test[:50], fmt(t), pct(busy), status))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
