#!/usr/bin/env python3
"""tiny-federation.py DIR SITES: the bench scripts' deterministic tiny
federation, SITES sites (site0..) of 16 train and 8 test rows, 4 features,
two separable classes, written as DIR/site<k>_{train,test}.csv.
Used by bench-pipeline.sh and pg-round-stats.sh."""
import os
import random
import sys

out, k = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
rng = random.Random(1234)


def rows(n):
    lines = ["x0,x1,x2,x3,y"]
    for i in range(n):
        y = i % 2
        xs = [rng.gauss(1.5 * y, 1.0) for _ in range(4)]
        lines.append(",".join(repr(x) for x in xs) + f",{y}")
    return "\n".join(lines) + "\n"


for s in range(k):
    for split, n in (("train", 16), ("test", 8)):
        with open(os.path.join(out, f"site{s}_{split}.csv"), "w") as f:
            f.write(rows(n))
