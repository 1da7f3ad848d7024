#!/usr/bin/env bash
# make bench-pipeline: speed of the durable pipeline on the local stack.
#
#  1. Per-round orchestration overhead with trivially cheap training: FedAvg
#     on tiny sites (16 train / 8 test rows, 4 features) at 8, 50 and 200
#     sites; per round = campaign wall time / rounds (stack start excluded).
#  2. The paper's table through the pipeline, preset paper, on the golden
#     seed-42 data (testdata/paper): 2 scenarios × 6 methods + the
#     3 pTopoFL ablations, with the authors' descriptor rows; wall time of
#     both `starter table` commands (stack start included, warm build), and
#     the AUC of each row beside the authors' value.
#  3. A 200-round campaign completes inside Temporal's history limits
#     (continue-as-new), checked from the visibility store.
#  4. The deep row: a deep-small FedAvg campaign on Fashion-MNIST (gendata
#     fashion-mnist, α 0.5, 10 sites, seed 1), DEEP_ROUNDS rounds, its
#     rounds split by `starter timings` (site activities TrainLocal and
#     Evaluate, their S3 reads and writes included; the rest:
#     orchestration and the server's local activities), its peak RSS, and
#     the PyTorch anchor's seconds per round on the same federation when
#     Debian's python3-torch is installed (`make bench-deep-anchor`
#     installs it). Skipped when Debian's dataset-fashion-mnist is not
#     installed (`make fashion-mnist`).
#
# Environment: BENCH_DIR (default .run/bench, wiped), BENCH_ROUNDS (10),
# PARALLEL (9, campaigns of the table at once), BIN (bin, where starter and
# gendata are), DEEP_ROUNDS (5).
#
# The machine's load is printed before each part: on 2 cores anything else
# running shifts these figures by tens of per cent.
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
OUT=${BENCH_DIR:-.run/bench}
ROUNDS=${BENCH_ROUNDS:-10}
PARALLEL=${PARALLEL:-9}
DEEP_ROUNDS=${DEEP_ROUNDS:-5}
for b in starter gendata; do
	[ -x "$BIN/$b" ] || { echo "bench-pipeline: $BIN/$b missing; run 'make build'" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "bench-pipeline: python3 needed for the tiny federations and the table" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT"

# tiny_federation DIR SITES: deterministic tiny sites, two separable classes.
tiny_federation() {
	python3 - "$1" "$2" <<'PY'
import os, random, sys
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
PY
}

load() { echo "load: $(uptime | sed 's/.*load average: //') (1, 5, 15 min)"; }

echo "== 1. per-round orchestration overhead (fedavg, tiny sites, $ROUNDS rounds)"
load
printf "%6s %8s %12s %12s\n" sites rounds wall_s per_round_ms
for k in 8 50 200; do
	fed="$OUT/tiny-$k"
	tiny_federation "$fed" "$k"
	json=$("$BIN/starter" run --local --data-dir "$OUT/stack-$k" --federation "$fed" \
		--method fedavg --rounds "$ROUNDS" --seed 1 --format json)
	python3 - "$k" "$ROUNDS" "$json" <<'PY'
import json, sys
k, rounds, r = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
assert r["state"] == "done" and r["rounds_done"] == rounds, r
print(f"{k:6d} {rounds:8d} {r['wall_seconds']:12.2f} {1000*r['wall_seconds']/rounds:12.1f}")
PY
done

echo
echo "== 2. paper table through the pipeline (preset paper, golden seed-42 data, 2 × (6 + 3) campaigns)"
load
variants=(--variant "pTopoFL_M1:ptopofl:clusters=1" --variant "pTopoFL_beta0:ptopofl:beta=0" --variant "pTopoFL_beta1:ptopofl:beta=1")
t0=$(date +%s.%N)
for sc in healthcare benchmark; do
	golden="testdata/paper/$sc"
	python3 -c "
import json, sys
cl = json.load(open('$golden/clients.json'))
json.dump({f\"client{c['client']}\": c['subsample_idx'] for c in cl}, open('$OUT/rows-$sc.json', 'w'))
"
	"$BIN/starter" table --local --data-dir "$OUT/stack-paper" --federation "$golden" \
		--preset paper --rounds 15 --seed 42 --descriptor-rows "$OUT/rows-$sc.json" \
		--methods ptopofl,fedprox,scaffold,pfedme,fedavg,local "${variants[@]}" \
		--parallel "$PARALLEL" --format json >"$OUT/table-$sc.json"
done
t1=$(date +%s.%N)
python3 - "$OUT" "$t0" "$t1" <<'PY'
import json, sys
out, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
names = {"ptopofl": "pTopoFL", "fedprox": "FedProx", "scaffold": "SCAFFOLD", "pfedme": "pFedMe",
         "fedavg": "FedAvg_true", "local": "LocalOnly"}
print(f"{'scenario':11s} {'row':15s} {'AUC':>8s} {'authors':>8s} {'acc':>8s} {'conv':>5s}")
for sc in ("healthcare", "benchmark"):
    got = json.load(open(f"{out}/table-{sc}.json"))
    exp = json.load(open(f"testdata/paper/{sc}/expected.json"))["methods"]
    for r in got["results"]:
        key = names.get(r["label"], r["label"])
        a = exp.get(key, {}).get("final_auc", float("nan"))
        print(f"{sc:11s} {r['label']:15s} {r['final_auc']:8.4f} {a:8.4f} {r['final_acc']:8.4f} {r['conv_round']:5d}")
    print(f"{sc:11s} table wall time {got['wall_seconds']:.2f} s")
print(f"paper table, both scenarios, 18 campaigns: {t1 - t0:.2f} s wall (two starter processes, stack start included; target < 16 s)")
PY

echo
echo "== 3. a 200-round campaign and Temporal's history limits"
load
json=$("$BIN/starter" run --local --data-dir "$OUT/stack-8" --federation "$OUT/tiny-8" \
	--method fedavg --rounds 200 --seed 2 --campaign long-200 --format json)
ls=$("$BIN/starter" ls --local --data-dir "$OUT/stack-8" --format json)
python3 - "$json" "$ls" <<'PY'
import json, sys
r, rows = json.loads(sys.argv[1]), json.loads(sys.argv[2])
row = next(x for x in rows if x["campaign"] == "long-200")
assert r["state"] == "done" and r["rounds_done"] == 200, r
print(f"200 rounds done in {r['wall_seconds']:.1f} s ({1000*r['wall_seconds']/200:.0f} ms/round); {row['runs']} runs (continue-as-new),")
print(f"largest run history {row['max_history_events']} events / {row['max_history_bytes']/1024:.0f} KiB "
      f"(suggested continue-as-new at 4,096 events / 4 MiB; hard limit 51,200 / 50 MiB)")
assert row["max_history_events"] < 4096 and row["max_history_bytes"] < 4 << 20, "history too large"
PY

echo
echo "== 4. deep row: deep-small FedAvg, Fashion-MNIST α 0.5, 10 sites, $DEEP_ROUNDS rounds"
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
	echo "skipped: Fashion-MNIST not installed (make fashion-mnist)"
	exit 0
fi
load
fed="$OUT/fm05"
"$BIN/gendata" fashion-mnist --alpha 0.5 --sites 10 --seed 1 --out "$fed" >/dev/null
/usr/bin/time -v "$BIN/starter" run --local --data-dir "$OUT/stack-deep" --federation "$fed" --method fedavg \
	--preset deep-small --rounds "$DEEP_ROUNDS" --seed 1 --format json >"$OUT/deep.json" 2>"$OUT/deep.time"
camp=$(python3 -c "import json; print(json.load(open('$OUT/deep.json'))['campaign'])")
"$BIN/starter" timings "$camp" --local --data-dir "$OUT/stack-deep" --format json >"$OUT/deep-timings.json" 2>/dev/null
anchor=""
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	/usr/bin/python3 scripts/anchor-deep.py --federation "$fed" --rounds "$DEEP_ROUNDS" >"$OUT/anchor.txt"
	anchor="$OUT/anchor.txt"
fi
load
python3 - "$OUT" "$anchor" <<'PY'
import json, sys
out, anchor = sys.argv[1], sys.argv[2]
r = json.load(open(f"{out}/deep.json"))
t = json.load(open(f"{out}/deep-timings.json"))["rounds"]
n = len(t)
wall = sum(x["wall_seconds"] for x in t) / n
act = {}
for x in t:
    for k, v in x["activity_seconds"].items():
        act[k] = act.get(k, 0) + v / n
rest = sum(x["orchestration_seconds"] for x in t) / n
rss = [l.split()[-1] for l in open(f"{out}/deep.time") if "Maximum resident" in l]
print(f"per round (mean of {n}): {wall:.2f} s wall = " + ", ".join(f"{k} {v:.2f} s ({100*v/wall:.0f} %)" for k, v in sorted(act.items()))
      + f", rest (orchestration + server local activities) {rest:.2f} s ({100*rest/wall:.1f} %)")
print(f"final_acc (update) {r['final_acc']:.4f}, after aggregation {r.get('final_acc_aggregate', float('nan')):.4f}; "
      f"peak RSS of the --local process {int(rss[0])/1024:.0f} MB" if rss else "")
if anchor:
    a = json.loads(open(anchor).read().strip().splitlines()[-1])
    print(f"PyTorch anchor, same federation: {a['seconds_per_round']:.2f} s per round (threads {a['threads']}); "
          f"durable round / anchor round = {wall / a['seconds_per_round']:.2f} (target <= 1.5)")
PY
