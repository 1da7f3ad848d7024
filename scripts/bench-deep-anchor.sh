#!/usr/bin/env bash
# make bench-deep-anchor: issue 13's PyTorch anchor (scripts/anchor-deep.py)
# on the same image federations our deep-small campaigns read.
#
# For each α in ALPHAS it writes `bin/gendata fashion-mnist --alpha α
# --sites 10 --seed SEED` under OUT and runs FedAvg with the anchor's CNN,
# 1 local epoch, batch 32, SGD 0.05 momentum 0.9, ROUNDS rounds, THREADS
# torch threads, printing per round the mean site top-1 of the aggregate
# (what our manifests call accuracy) and of each site's model after its
# local update (update_accuracy, our deep campaigns' final_acc), and the
# seconds per round. Debian's python3-torch (with OpenBLAS) is installed if
# missing; Debian's dataset-fashion-mnist too (`make fashion-mnist`).
#
# Environment: ALPHAS ("0.5 0.1"), SEED (1), ROUNDS (20), THREADS (2),
# BIN (bin), OUT (.run/bench-deep-anchor).
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
ALPHAS=${ALPHAS:-0.5 0.1}
SEED=${SEED:-1}
ROUNDS=${ROUNDS:-20}
THREADS=${THREADS:-2}
OUT=${OUT:-.run/bench-deep-anchor}
PY=/usr/bin/python3

need=()
"$PY" -c 'import torch' 2>/dev/null || need+=(python3-torch)
dpkg -s libopenblas0-pthread >/dev/null 2>&1 || need+=(libopenblas0-pthread)
dpkg -s dataset-fashion-mnist >/dev/null 2>&1 || need+=(dataset-fashion-mnist)
if [ ${#need[@]} -gt 0 ]; then
	echo "bench-deep-anchor: installing ${need[*]}" >&2
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}"
fi
GOTOOLCHAIN=local go build -o "$BIN/gendata" ./cmd/gendata
mkdir -p "$OUT"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
for a in $ALPHAS; do
	fed="$OUT/fm-$a-seed$SEED"
	[ -f "$fed/federation.json" ] || "$BIN/gendata" fashion-mnist --alpha "$a" --sites 10 --seed "$SEED" --out "$fed"
	echo "α = $a: $fed"
	"$PY" scripts/anchor-deep.py --federation "$fed" --rounds "$ROUNDS" --threads "$THREADS" --seed "$SEED" | tee "$OUT/anchor-$a.txt"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
