#!/usr/bin/env bash
# bench-search: adaptive sweeps against the exhaustive grids they replace,
# on the embedded stack, on two spaces:
#
#   small  the 48-point grid of issue 23: lr {0.01, 0.03, 0.1, 0.3} ×
#          steps {10, 30, 60} × beta {0, 0.3, 0.6, 1};
#   big    a 240-point grid where early stopping matters: lr {0.003, 0.01,
#          0.03, 0.1, 0.3} × steps {5, 10, 30, 60} × beta {0, 0.3, 0.6, 1}
#          × clusters {1, 2, 3}. At a third (or a tenth) of the grid's
#          campaign-rounds random search trains a third (a tenth) of the
#          points to the end; ASHA looks at every point for a round or
#          three first.
#
# For each space (SPACES, default "big small"):
# 1. FEDS healthcare federations (gendata healthcare --seed 1, 2, …: 8
#    sites, 2 label-flipping; default 3) and a grid sweep of pTopoFL under
#    `default` over the space, ROUNDS rounds (default 15),
#    validation_fraction 0.2, one campaign seed. Its best configuration is
#    selected on validation (the mean over the federations), and its test
#    AUC is the mark.
# 2. Replays of each strategy (STRATEGIES, plus random with Optuna's median
#    pruner) against the grid's per-round table over search seeds
#    1..SEEDS (default 10) at each budget fraction of the grid's
#    campaign-rounds (FRACTIONS, default "0.333 0.1"), and asha against
#    random paired over seeds: better, worse or tied in each seed, and the
#    exact two-sided Wilcoxon signed-rank p-value of the gaps.
# 3. Live sweeps (LIVE strategies, search seeds 1..LIVE_SEEDS, default 2
#    for big, SEEDS for small) over the same space at the first fraction,
#    three trials at once (LIVE_CONCURRENCY), continuing as new every 20
#    campaigns: each must take exactly its replay's decisions (the same
#    actions in the same order: `sweep replay --concurrency`).
#
# A grid.json already in OUT/<space> is reused (delete it to train the grid
# again). Results: OUT/results.md (and printed).
# Usage: scripts/bench-search.sh   (env: OUT, SPACES, FEDS, ROUNDS, SEEDS,
#        FRACTIONS, STRATEGIES, LIVE, LIVE_SEEDS, LIVE_CONCURRENCY)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/bench-search}
SPACES=${SPACES:-"big small"}
FEDS=${FEDS:-3}
ROUNDS=${ROUNDS:-15}
SEEDS=${SEEDS:-10}
FRACTIONS=${FRACTIONS:-"0.333 0.1"}
STRATEGIES=${STRATEGIES:-"random tpe asha tpe+asha hyperband"}
LIVE=${LIVE:-"asha random"}
LIVE_CONCURRENCY=${LIVE_CONCURRENCY:-3}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
DATA=$OUT/stack
: >"$OUT/results.md"

# A site's task queue is named after it: each federation's sites get
# names of their own (h1-site0, …).
FED_LIST=""
for s in $(seq 1 "$FEDS"); do
  if [ ! -d "$OUT/hc$s" ]; then
    bin/gendata healthcare --seed "$s" --out "$OUT/hc$s" >/dev/null
    for f in "$OUT/hc$s"/site*.csv; do mv "$f" "$OUT/hc$s/h$s-$(basename "$f")"; done
  fi
  FED_LIST="$FED_LIST${FED_LIST:+, }{name: hc$s, path: ../hc$s}"
done

run_space() {
  local space=$1 grid=$2 search=$3 live_seeds=$4
  local dir="$OUT/$space"
  mkdir -p "$dir"
  local gname="sg-$space"
  cat >"$dir/grid.yaml" <<EOF2
sweep: $gname
rounds: $ROUNDS
seeds: [1]
methods: [ptopofl]
federations: [$FED_LIST]
hyperparameters: {validation_fraction: 0.2}
grid: $grid
concurrency: 3
EOF2
  if [ ! -s "$dir/grid.json" ]; then
    local start
    start=$(date +%s.%N)
    bin/starter sweep "$dir/grid.yaml" --local --data-dir "$DATA" --format json >"$dir/grid.json.tmp"
    mv "$dir/grid.json.tmp" "$dir/grid.json"
    python3 -c "import sys; print(f'{float(sys.argv[2])-float(sys.argv[1]):.0f}')" "$start" "$(date +%s.%N)" >"$dir/grid.seconds"
  fi
  for frac in $FRACTIONS; do
    for s in $STRATEGIES random+median; do
      local strat=${s%+median} pruner=""
      [ "$s" = random+median ] && pruner="--pruner median"
      # shellcheck disable=SC2086
      bin/starter sweep replay --from "$gname" --strategy "$strat" $pruner --seeds "$SEEDS" --budget-fraction "$frac" \
        --local --data-dir "$DATA" --format json >"$dir/replay-$s-$frac.json"
    done
  done
  local frac1=${FRACTIONS%% *}
  for s in $LIVE; do
    bin/starter sweep replay --from "$gname" --strategy "$s" --seeds "$live_seeds" --budget-fraction "$frac1" \
      --concurrency "$LIVE_CONCURRENCY" --local --data-dir "$DATA" --format json >"$dir/replay-live-$s.json"
    for seed in $(seq 1 "$live_seeds"); do
      local name="search-$space-${s/+/-}-$seed" budget
      budget=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['budget']*$FEDS)" "$dir/replay-live-$s.json")
      cat >"$dir/$name.yaml" <<EOF2
sweep: $name
rounds: $ROUNDS
seeds: [1]
methods: [ptopofl]
federations: [$FED_LIST]
hyperparameters: {validation_fraction: 0.2}
concurrency: $((LIVE_CONCURRENCY * FEDS))
continue_as_new_every: 20
search: $search
strategy: $s
budget: {campaign_rounds: $budget}
seed: $seed
EOF2
      if [ ! -s "$dir/$name.json" ]; then
        local t0
        t0=$(date +%s.%N)
        bin/starter sweep "$dir/$name.yaml" --local --data-dir "$DATA" --format json >"$dir/$name.json"
        python3 -c "import sys; print(f'{float(sys.argv[2])-float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)" >"$dir/$name.seconds"
        bin/starter sweep status "$name" --local --data-dir "$DATA" --format json >"$dir/$name.status.json"
        cp "$DATA/s3/ptopofl/sweeps/$name/search.json" "$dir/$name.search.json"
      fi
    done
  done
  python3 - "$dir" "$space" "$SEEDS" "$FRACTIONS" "$STRATEGIES random+median" "$LIVE" "$live_seeds" "$FEDS" >>"$OUT/results.md" <<'PY'
import itertools, json, math, os, sys
d, space, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3])
fractions, strategies, live, live_seeds, feds = sys.argv[4].split(), sys.argv[5].split(), sys.argv[6].split(), int(sys.argv[7]), int(sys.argv[8])
grid = json.load(open(os.path.join(d, "grid.json")))
secs = open(os.path.join(d, "grid.seconds")).read().strip()
b = grid["best"]
tol = 0.005

def wilcoxon(diffs):
    """Exact two-sided Wilcoxon signed-rank p-value (zeros dropped, ties
    in |d| given their mean rank), by enumerating every sign pattern."""
    x = [v for v in diffs if abs(v) > 1e-12]
    n = len(x)
    if n == 0:
        return 1.0, 0
    order = sorted(range(n), key=lambda i: abs(x[i]))
    ranks = [0.0] * n
    i = 0
    while i < n:
        j = i
        while j + 1 < n and abs(abs(x[order[j + 1]]) - abs(x[order[i]])) < 1e-12:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    w = sum(r for r, v in zip(ranks, x) if v > 0)
    mean = sum(ranks) / 2
    extreme = 0
    for signs in itertools.product((0, 1), repeat=n):
        s = sum(r for r, g in zip(ranks, signs) if g)
        if abs(s - mean) >= abs(w - mean) - 1e-9:
            extreme += 1
    return extreme / 2 ** n, n

print(f"\n## {space}: {len(grid['rows']) // feds} configurations × {feds} federations × {grid['rows'][0]['rounds']} rounds\n")
print(f"Grid: {grid['rounds_spent']} campaign-rounds in {secs} s; its best on validation {json.dumps(b['setting'], sort_keys=True)}: validation {b['val_auc']:.4f}, test {b['final_auc']:.4f}.\n")
for frac in fractions:
    rs = {s: json.load(open(os.path.join(d, f"replay-{s}-{frac}.json"))) for s in strategies}
    budget = next(iter(rs.values()))["budget"]
    print(f"\n### budget {frac} of the grid ({budget} trial-rounds of {feds} campaigns), search seeds 1–{seeds}\n")
    print(f"| strategy | within {tol} of the grid's best test AUC | mean gap | median gap | trials (median) | ended (seeds) |")
    print("|---|---|---|---|---|---|")
    for s, r in rs.items():
        gaps = sorted(x["gap"] for x in r["seeds"])
        trials = sorted(x["trials"] for x in r["seeds"])
        ended = {}
        for x in r["seeds"]:
            ended[x["ended"]] = ended.get(x["ended"], 0) + 1
        print(f"| {s} | {r['within']} / {len(gaps)} | {sum(gaps)/len(gaps):.4f} | {gaps[len(gaps)//2]:.4f} | {trials[len(trials)//2]} | {', '.join(f'{k} {v}' for k, v in sorted(ended.items()))} |")
    for a in ("asha", "tpe+asha", "random+median"):
        if a not in rs or "random" not in rs:
            continue
        diffs = [x["gap"] - y["gap"] for x, y in zip(rs[a]["seeds"], rs["random"]["seeds"])]
        better = sum(1 for v in diffs if v < -1e-12)
        worse = sum(1 for v in diffs if v > 1e-12)
        p, n = wilcoxon(diffs)
        print(f"\n{a} vs random, paired over seeds (gap to the grid's best test AUC): {a} better in {better}, worse in {worse}, tied in {len(diffs) - better - worse}; Wilcoxon signed-rank (exact, two-sided, {n} non-zero pairs) p = {p:.3f}")

if live and live_seeds > 0:
    print(f"\n### live sweeps at the first budget, three trials at once\n")
    print("| strategy | seed | live = replay (actions) | trials | campaign-rounds | continue-as-new | incumbent's test AUC | wall |")
    print("|---|---|---|---|---|---|---|---|")
    for s in live:
        rep = json.load(open(os.path.join(d, f"replay-live-{s}.json")))
        for seed in range(1, live_seeds + 1):
            name = f"search-{space}-{s.replace('+', '-')}-{seed}"
            out = json.load(open(os.path.join(d, name + ".json")))
            rec = json.load(open(os.path.join(d, name + ".search.json")))
            st = json.load(open(os.path.join(d, name + ".status.json")))
            ev = [(e["kind"], e["trial"], e["from"], e["to"], e["start"]) for e in rec["events"]]
            rev = [(e["action"]["kind"], e["action"]["trial"], e["action"]["from_round"], e["action"]["to_round"], e["start"]) for e in rep["seeds"][seed - 1]["events"]]
            wall = open(os.path.join(d, name + ".seconds")).read().strip()
            best = out["best"]["final_auc"] if out["best"] else float("nan")
            print(f"| {s} | {seed} | {'yes' if ev == rev else 'NO'} ({len(ev)}) | {out['trials']} | {out['rounds_spent']} | {st.get('continued_as_new', 0)} | {best:.4f} | {wall} s |")
PY
}

run_space_named() {
  case $1 in
  small) run_space small '{lr: [0.01, 0.03, 0.1, 0.3], steps: [10, 30, 60], beta: [0, 0.3, 0.6, 1]}' \
    '{beta: [0, 0.3, 0.6, 1], lr: [0.01, 0.03, 0.1, 0.3], steps: [10, 30, 60]}' "${LIVE_SEEDS:-$SEEDS}" ;;
  big) run_space big '{lr: [0.003, 0.01, 0.03, 0.1, 0.3], steps: [5, 10, 30, 60], beta: [0, 0.3, 0.6, 1], clusters: [1, 2, 3]}' \
    '{beta: [0, 0.3, 0.6, 1], clusters: [1, 2, 3], lr: [0.003, 0.01, 0.03, 0.1, 0.3], steps: [5, 10, 30, 60]}' "${LIVE_SEEDS:-2}" ;;
  *) echo "unknown space $1 (want big or small)" >&2; exit 2 ;;
  esac
}
for sp in $SPACES; do run_space_named "$sp"; done
cat "$OUT/results.md"
