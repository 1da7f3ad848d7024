#!/usr/bin/env python3
"""Table 1 through the durable pipeline against the authors' in-memory script.

Usage: scripts/bench-table1.py --starter BIN/starter [--base BASEBIN/starter]
           [--authors PATH] [--runs 3] [--warmup 1] [--dir DIR] [--json FILE]

Times, side by side in one alternating run, the commands that produce
Table 1 of the paper at one seed:

  ours     `starter experiment table1 --local --seeds 1 --preset paper`
           (12 campaigns x 15 rounds through Temporal and S3), each run on
           a fresh data directory, so that every run starts the stack and
           computes every round;
  base     the same command with another build (--base), e.g. the code
           before a change;
  authors  scripts/authors-table1.py PATH: the authors' paper-era code
           (commit c027eae of MorillaLab/TopoFederatedL, a copy at PATH)
           producing the same 12 rows in memory.

Each command runs --warmup times first (not counted), then --runs times,
in turn (ours, base, authors, ours, base, ...), so that a drift of the
machine's speed falls on all of them alike. Each run is measured from
outside by /usr/bin/time: wall seconds, user and system CPU seconds of the
command and every process it waited for, and the peak resident memory of
the largest single process among them. The medians are printed with the
ratios ours/authors and ours/base, and the issue's targets beside them
(wall <= the authors', CPU <= 1.5 x theirs, peak memory <= 300 MiB); the
script measures and never fails on a target. It fails if a run fails, or
if our final AUCs differ from one run to the next.

Wall time needs a quiet machine: the load average is printed before and
after; CPU time and peak memory are steadier under load, wall time is not.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def timed(cmd, out_path):
    """Runs cmd under /usr/bin/time; returns (wall, user, sys, peak KiB)."""
    tf = out_path + ".time"
    with open(out_path, "w") as out, open(out_path + ".err", "w") as err:
        rc = subprocess.call(["/usr/bin/time", "-f", "%e %U %S %M", "-o", tf] + cmd, stdout=out, stderr=err)
    if rc != 0:
        tail = open(out_path + ".err", errors="replace").read()[-2000:]
        sys.exit(f"bench-table1: failed (exit {rc}): {' '.join(cmd)}\n{tail}")
    # /usr/bin/time appends its line after anything the command wrote there.
    wall, user, sys_, peak = open(tf).read().split("\n")[-2].split()
    return float(wall), float(user), float(sys_), int(peak)


def ours_cmd(starter, d):
    return [starter, "experiment", "table1", "--local", "--seeds", "1", "--preset", "paper",
            "--data-dir", os.path.join(d, "data"), "--out", os.path.join(d, "out"), "--format", "json"]


def final_aucs(path):
    """The final AUC of every row of a `starter experiment --format json` output."""
    rows = json.load(open(path)).get("rows") or []
    return {f"{r.get('federation')}/{r.get('method')}/{r.get('setting', '')}": r.get("final_auc") for r in rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starter", required=True)
    ap.add_argument("--base")
    ap.add_argument("--authors")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--dir")
    ap.add_argument("--json")
    a = ap.parse_args()
    work = a.dir or tempfile.mkdtemp(prefix="bench-table1-")
    os.makedirs(work, exist_ok=True)

    cmds = [("ours", lambda d: ours_cmd(a.starter, d))]
    if a.base:
        cmds.append(("base", lambda d: ours_cmd(a.base, d)))
    if a.authors:
        cmds.append(("authors", lambda d: ["/usr/bin/python3", os.path.join(HERE, "authors-table1.py"), a.authors]))
    print(f"load before: {load()} (1, 5, 15 min)")
    res = {name: [] for name, _ in cmds}
    aucs = {}
    n = 0
    for i in range(a.warmup + a.runs):
        for name, mk in cmds:
            n += 1
            d = os.path.join(work, f"{n:02d}-{name}")
            os.makedirs(d)
            m = timed(mk(d), os.path.join(d, "output.json"))
            if name != "authors":
                got = final_aucs(os.path.join(d, "output.json"))
                if not got or (name in aucs and aucs[name] != got):
                    sys.exit(f"bench-table1: {name}: final AUCs {got} differ from the first run's {aucs.get(name)}")
                aucs[name] = got
            shutil.rmtree(os.path.join(d, "data"), ignore_errors=True)
            if i >= a.warmup:
                res[name].append(m)
            print(f"  {'warm-up' if i < a.warmup else f'run {i - a.warmup + 1}'} {name:8s} wall {m[0]:6.2f} s  "
                  f"cpu {m[1] + m[2]:6.2f} s (system {m[2]:5.2f} s)  peak {m[3] / 1024:6.0f} MiB", flush=True)
    print(f"load after: {load()}")
    if "base" in aucs and aucs["base"] != aucs["ours"]:
        print(f"note: the base build's final AUCs differ from ours: {aucs['base']} vs {aucs['ours']}")

    med = {}
    for name, rs in res.items():
        med[name] = {
            "wall": statistics.median(r[0] for r in rs),
            "cpu": statistics.median(r[1] + r[2] for r in rs),
            "system": statistics.median(r[2] for r in rs),
            "peak_mib": statistics.median(r[3] for r in rs) / 1024,
            "runs": [{"wall": r[0], "user": r[1], "system": r[2], "peak_kib": r[3]} for r in rs],
        }
    names = list(med)
    print()
    print(f"median of {a.runs} alternating runs after {a.warmup} warm-up" + ("s" if a.warmup != 1 else ""))
    head = f"| {'median':26s} |" + "".join(f" {k:>9s} |" for k in names)
    if "authors" in med:
        head += " ours/authors | target |"
    if "base" in med:
        head += " ours/base |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    targets = {"wall": ("<= 1", 1.0), "cpu": ("<= 1.5", 1.5)}
    for key, label, unit in (("wall", "wall", "s"), ("cpu", "CPU (user + system)", "s"),
                             ("system", "system CPU", "s"), ("peak_mib", "peak memory of a process", "MiB")):
        line = f"| {label:26s} |" + "".join(f" {med[k][key]:7.2f} {unit[0]:1s} |" if unit == "s" else f" {med[k][key]:6.0f} MiB |" for k in names)
        if "authors" in med:
            r = med["ours"][key] / med["authors"][key] if med["authors"][key] else float("nan")
            t = targets.get(key, ("", None))[0]
            if key == "peak_mib":
                t = "<= 300 MiB"
            line += f" {r:12.2f} | {t:6s} |"
        if "base" in med:
            line += f" {med['ours'][key] / med['base'][key]:9.2f} |"
        print(line)
    if "authors" in med:
        o, au = med["ours"], med["authors"]
        verdict = lambda ok: "met" if ok else "NOT met"
        print(f"targets: wall {verdict(o['wall'] <= au['wall'])}, CPU {verdict(o['cpu'] <= 1.5 * au['cpu'])}, "
              f"peak memory {verdict(o['peak_mib'] <= 300)} (wall time counts only on a quiet machine)")
    if a.json:
        json.dump({"load": load(), "medians": med}, open(a.json, "w"), indent=1)
    if not a.dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
