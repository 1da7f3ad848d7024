#!/usr/bin/env bash
# bench-search: adaptive sweeps against the exhaustive grid they replace
# (issue 23's acceptance), on the embedded stack.
#
# 1. Three healthcare federations (gendata healthcare --seed 1, 2, 3: 8
#    sites, 2 label-flipping), and a grid sweep of pTopoFL under `default`
#    over lr × steps × beta (4 × 3 × 4 = 48 configurations), 15 rounds,
#    validation_fraction 0.2, one campaign seed: 144 campaigns, 2160
#    campaign-rounds. Its best configuration is selected on validation
#    (the mean over the three federations), and its test AUC is the mark.
# 2. Replays of each strategy against the grid's per-round table over
#    search seeds 1..SEEDS at a third of the grid's campaign-rounds.
# 3. Live sweeps (LIVE strategies, search seeds 1..SEEDS) over the same
#    space of choices with the same budget: each trial runs on the three
#    federations, one trial at a time as the replay does, so each live
#    sweep must take exactly its replay's decisions; the table gives both.
#    A live sweep trains a third of the grid (about two minutes here), so
#    LIVE_SEEDS (default SEEDS) may run fewer seeds live than replayed.
#
# A grid.json already in OUT is reused (delete it to train the grid again).
# Usage: scripts/bench-search.sh   (env: OUT, SEEDS, LIVE_SEEDS, LIVE, STRATEGIES)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/bench-search}
SEEDS=${SEEDS:-10}
STRATEGIES=${STRATEGIES:-"random tpe asha tpe+asha hyperband"}
LIVE=${LIVE:-"tpe+asha random asha"}
LIVE_SEEDS=${LIVE_SEEDS:-$SEEDS}
DATA=$OUT/stack
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
DATA=$OUT/stack

# A site's task queue is named after it: each federation's sites get
# names of their own (h1-site0, …).
for s in 1 2 3; do
  if [ ! -d "$OUT/hc$s" ]; then
    bin/gendata healthcare --seed "$s" --out "$OUT/hc$s" >/dev/null
    for f in "$OUT/hc$s"/site*.csv; do mv "$f" "$OUT/hc$s/h$s-$(basename "$f")"; done
  fi
done

SPACE_GRID='{lr: [0.01, 0.03, 0.1, 0.3], steps: [10, 30, 60], beta: [0, 0.3, 0.6, 1]}'
cat >"$OUT/grid.yaml" <<EOF
sweep: search-grid
rounds: 15
seeds: [1]
methods: [ptopofl]
federations: [{name: hc1, path: hc1}, {name: hc2, path: hc2}, {name: hc3, path: hc3}]
hyperparameters: {validation_fraction: 0.2}
grid: $SPACE_GRID
concurrency: 3
EOF
if [ ! -s "$OUT/grid.json" ]; then
  start=$(date +%s.%N)
  bin/starter sweep "$OUT/grid.yaml" --local --data-dir "$DATA" --format json >"$OUT/grid.json.tmp"
  mv "$OUT/grid.json.tmp" "$OUT/grid.json"
  python3 -c "import sys; print(f'{float(sys.argv[2])-float(sys.argv[1]):.0f}')" "$start" "$(date +%s.%N)" >"$OUT/grid.seconds"
fi
grid_s=$(cat "$OUT/grid.seconds")
read -r GRID_ROUNDS GRID_BEST GRID_VAL GRID_SET < <(python3 - "$OUT/grid.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
b = d["best"]
print(d["rounds_spent"], f'{b["final_auc"]:.4f}', f'{b["val_auc"]:.4f}', json.dumps(b["setting"], sort_keys=True).replace(" ", ""))
PY
)
BUDGET=$((GRID_ROUNDS / 3))
echo "grid: 48 configurations × 3 federations × 15 rounds = $GRID_ROUNDS campaign-rounds in ${grid_s}s; best (on validation) $GRID_SET: validation $GRID_VAL, test $GRID_BEST; budget $BUDGET campaign-rounds"

# Replays.
for s in $STRATEGIES; do
  bin/starter sweep replay --from search-grid --strategy "$s" --seeds "$SEEDS" --local --data-dir "$DATA" --format json >"$OUT/replay-$s.json"
done

# Live sweeps.
for s in $LIVE; do
  for seed in $(seq 1 "$LIVE_SEEDS"); do
    name="search-${s/+/-}-$seed"
    cat >"$OUT/$name.yaml" <<EOF
sweep: $name
rounds: 15
seeds: [1]
methods: [ptopofl]
federations: [{name: hc1, path: hc1}, {name: hc2, path: hc2}, {name: hc3, path: hc3}]
hyperparameters: {validation_fraction: 0.2}
concurrency: 3
search:                      # the grid's space, in its order (the replay's)
  - {name: beta, choice: [0, 0.3, 0.6, 1]}
  - {name: lr, choice: [0.01, 0.03, 0.1, 0.3]}
  - {name: steps, choice: [10, 30, 60]}
strategy: $s
budget: {campaign_rounds: $BUDGET}
seed: $seed
EOF
    t0=$(date +%s.%N)
    bin/starter sweep "$OUT/$name.yaml" --local --data-dir "$DATA" --format json >"$OUT/$name.json"
    python3 -c "import sys; print(f'{float(sys.argv[2])-float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)" >"$OUT/$name.seconds"
  done
done

python3 - "$OUT" "$LIVE_SEEDS" "$GRID_BEST" "$STRATEGIES" "$LIVE" <<'PY'
import json, os, sys
out, seeds, grid_best = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
strategies, live = sys.argv[4].split(), sys.argv[5].split()
tol = 0.005
print(f"\n| strategy | replay: within {tol} of the grid's best test AUC | replay mean gap | live: within | live mean gap | live = replay (seeds) | live wall (median) |")
print("|---|---|---|---|---|---|---|")
for s in strategies:
    r = json.load(open(os.path.join(out, f"replay-{s}.json")))
    gaps = [x["gap"] for x in r["seeds"]]
    row = f"| {s} | {r['within']} / {len(gaps)} | {sum(gaps)/len(gaps):.4f} |"
    if s in live:
        lg, same, walls = [], 0, []
        for seed in range(1, seeds + 1):
            name = f"search-{s.replace('+', '-')}-{seed}"
            d = json.load(open(os.path.join(out, name + ".json")))
            b = d["best"]
            lg.append(grid_best - b["final_auc"])
            rep = r["seeds"][seed - 1]["incumbent"]
            cfg = {pv["name"]: pv.get("text") or pv["value"] for pv in rep["config"]}
            if all(abs(float(cfg[k]) - float(v)) < 1e-12 for k, v in b["setting"].items()) and d["rounds_spent"] == 3 * r["seeds"][seed - 1]["rounds_spent"]:
                same += 1
            walls.append(float(open(os.path.join(out, name + ".seconds")).read()))
        walls.sort()
        within = sum(1 for g in lg if g <= tol)
        row += f" {within} / {len(lg)} | {sum(lg)/len(lg):.4f} | {same} / {len(lg)} | {walls[len(walls)//2]:.1f} s |"
    else:
        row += " — | — | — | — |"
    print(row)
PY
