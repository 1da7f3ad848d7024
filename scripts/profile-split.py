#!/usr/bin/env python3
"""Split a Go CPU profile into the parts of a durable round.

Usage: go tool pprof -traces BINARY PROFILE | scripts/profile-split.py [--json]

Each sample is charged to the first frame, walking from the leaf towards
the root, that belongs to a part of the pipeline (the table below); frames
of Go's standard library, the runtime and protobuf are skipped, so that a
syscall, an allocation or a marshal is charged to whoever made it (SQLite's
write, the S3 server's response, the gRPC transport's read). A stack with
no such frame is charged by its root: the garbage collector's workers,
the scheduler, or net/http's client connections (the S3 client's).

Prints each part's seconds and share, and how much of it was spent in
system calls (samples whose leaf is a syscall); --json prints the same as
one JSON object. A heap profile's traces (go tool pprof -traces
-sample_index=alloc_space ...) are split the same way, in MiB.
"""
import json
import re
import sys

# (part, regular expression on the function's full name), first match wins.
PARTS = [
    ("sqlite", r"^modernc\.org/(sqlite|libc|mathutil|memory)"),
    ("temporal persistence (sql)", r"^(go\.temporal\.io/server/common/persistence|github\.com/jmoiron/sqlx)"),
    ("temporal server", r"^(go\.temporal\.io/server/|go\.uber\.org/)"),
    ("temporal sdk", r"^go\.temporal\.io/sdk/"),
    ("temporal api", r"^go\.temporal\.io/api/"),
    ("grpc", r"^(google\.golang\.org/grpc|golang\.org/x/net/http2)"),
    ("s3 server", r"^(github\.com/versity/|github\.com/gofiber/|github\.com/valyala/|github\.com/ptopofl/ptopofl/internal/s3local|github\.com/pkg/xattr)"),
    ("s3 client", r"^github\.com/minio/minio-go"),
    ("parquet", r"^(github\.com/apache/arrow-go|github\.com/ptopofl/ptopofl/store\.(Encode|Decode|encode|decode|write|read)|github\.com/klauspost/compress|github\.com/apache/thrift)"),
    ("store (cache, keys, hashing)", r"^github\.com/ptopofl/ptopofl/store"),
    ("training and evaluation", r"^github\.com/ptopofl/ptopofl/(learn|method|aggregation|tda|nn|eval\.(ROC|AUC|Accuracy))"),
    ("data generation and report", r"^(github\.com/ptopofl/ptopofl/(eval|dataset|experiments|report)|gonum\.org/v1/plot|github\.com/golang/freetype)"),
    ("activities", r"^github\.com/ptopofl/ptopofl/activities"),
    ("workflows", r"^github\.com/ptopofl/ptopofl/workflows"),
    ("ptopofl other", r"^github\.com/ptopofl/ptopofl/"),
    ("other libraries", r"^[a-z0-9-]+\.[a-z.]+/"),
]
PARTS = [(name, re.compile(rx)) for name, rx in PARTS]

def skipped(fn):
    """Frames skipped on the walk: the standard library (no dot in the first
    element of its import path), the runtime, protobuf, x/sys."""
    head = fn.split("/")[0]
    if fn.startswith(("google.golang.org/protobuf", "github.com/gogo/protobuf", "golang.org/x/sys")):
        return True
    # Standard library: its import path has no dot in its first element.
    if "/" in fn:
        return "." not in head
    return True  # "runtime.x", "syscall.y", "main.z" (main is ours: see below)


def root_part(frames):
    root = " ".join(frames[-3:])
    if "gcBgMarkWorker" in root or "runtime.bgsweep" in root or "runtime.bgscavenge" in root:
        return "go runtime: garbage collector"
    if "net/http.(*persistConn)" in root or "net/http.(*Transport)" in root:
        return "s3 client"
    if "net/http.(*conn).serve" in root:
        return "s3 server"
    for f in frames:
        if f.startswith("main."):
            return "ptopofl other"
    return "go runtime: scheduler and other"


def part_of(frames):
    for f in frames:
        if skipped(f) and not f.startswith("main."):
            continue
        for name, rx in PARTS:
            if rx.search(f):
                return name
    return root_part(frames)


UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600,
         "B": 1 / 2**20, "kB": 1 / 2**10, "MB": 1, "GB": 2**10, "TB": 2**20}
VALUE = re.compile(r"([\d.]+)(" + "|".join(sorted(UNITS, key=len, reverse=True)) + r")$")


def seconds(v):
    """A sample's value: seconds of a CPU profile, MiB of a heap profile."""
    m = VALUE.match(v)
    if not m:
        raise ValueError(f"cannot read sample value {v!r}")
    return float(m.group(1)) * UNITS[m.group(2)]


def main():
    as_json = "--json" in sys.argv[1:]
    total, parts, sys_parts = 0.0, {}, {}
    frames, value = [], None

    def flush():
        nonlocal total
        if value is None:
            return
        p = part_of(frames)
        total += value
        parts[p] = parts.get(p, 0) + value
        if frames and ("syscall" in frames[0].lower() or frames[0].startswith("runtime.futex")
                       or frames[0].startswith("runtime.usleep") or frames[0].startswith("runtime.epoll")):
            sys_parts[p] = sys_parts.get(p, 0) + value

    for line in sys.stdin:
        line = line.rstrip("\n")
        if line.startswith("-----------+"):
            flush()
            frames, value = [], None
            continue
        if value is None:
            m = re.match(r"\s*(\S+)\s+(\S.*)$", line)
            if m and VALUE.match(m.group(1)):
                value = seconds(m.group(1))
                frames = [m.group(2).replace(" (inline)", "").strip()]
            continue
        f = line.strip().replace(" (inline)", "")
        if f:
            frames.append(f)
    flush()
    rows = sorted(parts.items(), key=lambda kv: -kv[1])
    if as_json:
        print(json.dumps({"total_seconds": round(total, 3),
                          "parts": {k: {"seconds": round(v, 3), "syscall_seconds": round(sys_parts.get(k, 0), 3)} for k, v in rows}}))
        return
    print(f"{'part':34s} {'value':>7s} {'share':>6s} {'in syscalls':>11s}")
    for k, v in rows:
        print(f"{k:34s} {v:7.2f} {100 * v / total:5.1f}% {sys_parts.get(k, 0):10.2f}s")
    print(f"{'total':34s} {total:7.2f}")


if __name__ == "__main__":
    main()
