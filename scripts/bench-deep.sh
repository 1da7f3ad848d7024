#!/usr/bin/env bash
# make bench-deep: the speed and memory of a deep training step, ours against
# PyTorch's, in the same run.
#
# For LEAF's ConvNet-2 (62 classes) and the MLP 784-256-10, batch 64 on
# random 28x28x1 inputs, SGD with momentum: `bin/nn bench` and
# scripts/bench_deep_torch.py (Debian's python3-torch with OpenBLAS, 2
# threads) alternate
# REPEATS times, each timing STEPS steps after 2 warm-up steps, under
# /usr/bin/time -v for the peak resident set size. The table gives the best
# step_ms_min and the median of the runs' step_ms_median for each, the
# ratios ours/PyTorch, and the largest peak RSS.
#
# THREADS lists the thread counts to compare at (default "2 1": bin/nn
# --workers and torch.set_num_threads; one thread shows each side's
# single-core efficiency, which the other load on the machine disturbs less).
#
# A second table gives DP-SGD's cost (ours only: Opacus is not available
# offline): `bin/nn bench --dp` (per-example clipping to norm 1, noise
# multiplier 1 drawn by the sites' own mechanism (privacy/noise), the batch of 64 taken as the
# Poisson sample) beside the plain step, in the same alternation, for the
# deep-small CNN (conv 5x5x16, pool, conv 5x5x32, pool, dense 10; 28,938
# parameters) and ConvNet-2 (62 classes), with the ratio DP/plain of the
# medians.
#
# Environment: STEPS (10), REPEATS (3), THREADS ("2 1"), BIN (bin),
# OUT (.run/bench-deep), TORCH (1; 0 skips the PyTorch yardstick and its
# table, e.g. offline, and prints the DP table alone).
#
# The machine's load is printed first: on 2 cores another build running
# shifts both sides' figures by tens of per cent.
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
STEPS=${STEPS:-10}
REPEATS=${REPEATS:-3}
THREADS=${THREADS:-2 1}
OUT=${OUT:-.run/bench-deep}
PY=/usr/bin/python3

# Debian's torch is built against the generic BLAS interface: with only the
# reference libblas3 installed its dense layers run ~10x slower than with
# OpenBLAS (ConvNet-2 ~1000 ms a step here instead of ~100-400), which would
# make the yardstick meaningless. libopenblas0-pthread takes over libblas.so.3
# through the alternatives system.
TORCH=${TORCH:-1}
need=()
if [ "$TORCH" = 1 ]; then
	"$PY" -c 'import torch' 2>/dev/null || need+=(python3-torch)
	dpkg -s libopenblas0-pthread >/dev/null 2>&1 || need+=(libopenblas0-pthread)
fi
if [ ${#need[@]} -gt 0 ]; then
	echo "bench-deep: installing ${need[*]} (the yardstick)" >&2
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}"
fi
[ -x /usr/bin/time ] || { echo "bench-deep: /usr/bin/time missing (Debian package 'time')" >&2; exit 1; }
GOTOOLCHAIN=local go build -o "$BIN/nn" ./cmd/nn
rm -rf "$OUT"
mkdir -p "$OUT"

echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

# measure NAME CMD...: runs CMD under /usr/bin/time -v, keeps its JSON line
# in $OUT/NAME.jsonl and its peak RSS (KiB) in $OUT/NAME.rss.
measure() {
	local name=$1
	shift
	/usr/bin/time -v "$@" >"$OUT/$name.out" 2>"$OUT/$name.time"
	cat "$OUT/$name.out" >>"$OUT/$name.jsonl"
	grep 'Maximum resident set size' "$OUT/$name.time" | awk '{print $NF}' >>"$OUT/$name.rss"
}

for r in $(seq "$REPEATS"); do
	for t in $THREADS; do
		if [ "$TORCH" = 1 ]; then
			for m in "convnet2 62" "mlp 10"; do
				set -- $m
				measure "go-$1-$t" "$BIN/nn" bench --model "$1" --classes "$2" --batch 64 --steps "$STEPS" --workers "$t" --format json
				measure "torch-$1-$t" "$PY" scripts/bench_deep_torch.py --model "$1" --classes "$2" --batch 64 --steps "$STEPS" --threads "$t"
			done
		fi
		# DP-SGD beside the plain step, alternating.
		for m in "cnn 10" "convnet2 62"; do
			set -- $m
			measure "plain-$1-$t" "$BIN/nn" bench --model "$1" --classes "$2" --batch 64 --steps "$STEPS" --workers "$t" --format json
			measure "dp-$1-$t" "$BIN/nn" bench --model "$1" --classes "$2" --batch 64 --steps "$STEPS" --workers "$t" --format json --dp --clip 1 --noise 1
		done
	done
done

"$PY" - "$OUT" "$STEPS" "$REPEATS" "$TORCH" $THREADS <<'PY'
import json, statistics, sys
out, steps, repeats, torch, threads = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5:]
def load(name):
    runs = [json.loads(l) for l in open(f"{out}/{name}.jsonl")]
    rss = [int(l) for l in open(f"{out}/{name}.rss")]
    return {"params": runs[0]["params"],
            "min": min(r["step_ms_min"] for r in runs),
            "median": statistics.median(r["step_ms_median"] for r in runs),
            "rss": max(rss) / 1024}
print(f"batch 64, SGD momentum 0.9, {steps} timed steps per run, {repeats} runs each, alternating; "
      "min = best step of all runs, median = median of the runs' medians; RSS = largest peak")
if torch:
    print(f"{'model':<22} {'threads':>7} {'params':>9} | {'ours min':>8} {'median':>8} | {'torch min':>9} {'median':>8} | "
          f"{'ratio min':>9} {'median':>7} | {'RSS ours':>8} {'torch':>7} {'ratio':>6}")
    for th in threads:
        for m, label in [("convnet2", "convnet2 (62 classes)"), ("mlp", "mlp 784-256-10")]:
            g, t = load(f"go-{m}-{th}"), load(f"torch-{m}-{th}")
            if g["params"] != t["params"]:
                sys.exit(f"bench-deep: {m}: {g['params']} parameters here, {t['params']} in PyTorch")
            print(f"{label:<22} {th:>7} {g['params']:>9} | {g['min']:>8.2f} {g['median']:>8.2f} | {t['min']:>9.2f} {t['median']:>8.2f} | "
                  f"{g['min']/t['min']:>9.2f} {g['median']/t['median']:>7.2f} | {g['rss']:>6.0f}MB {t['rss']:>5.0f}MB {g['rss']/t['rss']:>6.2f}")
    print()
print("DP-SGD (ours only): per-example clipping C = 1, noise z = 1 drawn by the sites' own mechanism (privacy/noise, one thread); ratio = DP/plain")
print(f"{'model':<22} {'threads':>7} {'params':>9} | {'plain min':>9} {'median':>8} | {'DP min':>8} {'median':>8} | "
      f"{'ratio min':>9} {'median':>7} | {'RSS plain':>9} {'DP':>6}")
for th in threads:
    for m, label in [("cnn", "cnn deep-small (10)"), ("convnet2", "convnet2 (62 classes)")]:
        p, d = load(f"plain-{m}-{th}"), load(f"dp-{m}-{th}")
        print(f"{label:<22} {th:>7} {p['params']:>9} | {p['min']:>9.2f} {p['median']:>8.2f} | {d['min']:>8.2f} {d['median']:>8.2f} | "
              f"{d['min']/p['min']:>9.2f} {d['median']/p['median']:>7.2f} | {p['rss']:>7.0f}MB {d['rss']:>4.0f}MB")
PY
