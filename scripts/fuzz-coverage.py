#!/usr/bin/env python3
"""Coverage of the device's source files from an llvm-cov export.

usage: fuzz-coverage.py EXPORT_JSON

EXPORT_JSON is `llvm-cov export` of the coverage build's fuzz binary over
the device's files (hw/display/pagoda/*.c) after replaying a corpus. Prints
one line per file (lines and branch outcomes covered), the device's total,
and the branch outcomes an input can reach: the counters run from the
process's start, so the code that runs while QEMU starts (realize, class
and type registration, property checks, the power management capability,
the mode list) is counted as far as this configuration takes it; its other
outcomes (a property refused, a failed allocation at realize, unrealize)
no input can reach, and they are left out of that last figure.

A branch has two outcomes (taken, not taken); an outcome is covered when
some input took it. The last line is machine-readable:
"reachable <covered> <total>".
"""
import json
import re
import sys

DEVICE_DIR = "/hw/display/pagoda/"
STARTUP = re.compile(r"(realize|class_init|pm_init|check_properties|"
                     r"register_types|add_mode)")


def outcomes(branches):
    covered = total = 0
    for b in branches:
        # [line, col, end line, end col, true count, false count, ...]
        total += 2
        covered += (b[4] > 0) + (b[5] > 0)
    return covered, total


def main():
    data = json.load(open(sys.argv[1]))["data"][0]
    files = {}
    for f in data["files"]:
        if DEVICE_DIR not in f["filename"] or not f["summary"]["lines"]["count"]:
            continue
        name = f["filename"].split(DEVICE_DIR)[1]
        s = f["summary"]
        files[name] = [s["lines"]["covered"], s["lines"]["count"],
                       s["branches"]["covered"], s["branches"]["count"]]
    reach_cov = reach_total = startup = 0
    for fn in data["functions"]:
        if not any(DEVICE_DIR in n for n in fn["filenames"]):
            continue
        cov, total = outcomes(fn["branches"])
        reach_cov += cov
        if STARTUP.search(fn["name"]):
            startup += total - cov
            total = cov
        reach_total += total
    sums = [0, 0, 0, 0]
    for name in sorted(files):
        v = files[name]
        sums = [a + b for a, b in zip(sums, v)]
        print(f"{name:20} lines {v[0]:5}/{v[1]:<5} {100 * v[0] / max(v[1], 1):5.1f}%"
              f"   branches {v[2]:5}/{v[3]:<5} {100 * v[2] / max(v[3], 1):5.1f}%")
    print(f"{'device':20} lines {sums[0]:5}/{sums[1]:<5} "
          f"{100 * sums[0] / max(sums[1], 1):5.1f}%   branches {sums[2]:5}/{sums[3]:<5} "
          f"{100 * sums[2] / max(sums[3], 1):5.1f}%")
    print(f"reachable branches {reach_cov}/{reach_total} "
          f"{100 * reach_cov / max(reach_total, 1):.1f}% "
          f"(without the {startup} start-up outcomes no input reaches)")
    print(f"reachable {reach_cov} {reach_total}")


if __name__ == "__main__":
    main()
