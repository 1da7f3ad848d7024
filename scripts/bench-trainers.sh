#!/usr/bin/env bash
# make bench-trainers (and part 6 of make bench-pipeline): sites that train
# with their own program under the trainer protocol ptopofl.trainer/v1
# (model "external"), per task (--trainer: one process per task) and in
# serve mode (--trainer-serve: one process per site serving every task),
# against our in-process models on the same federation, on the local stack
# (`starter run --local`, one trainer slot: the default).
#
#  a. The cost of one task: the runner's own, per task (a program that does
#     next to nothing: BenchmarkRunTask, internal/trainerrun) and through a
#     serve-mode process already running (BenchmarkServeTask), and
#     `python3 -c "import torch"` (median of 5) when PyTorch is installed.
#  b. Tabular FedAvg, default preset, the golden healthcare federation
#     (testdata/paper/healthcare, 8 sites), 15 rounds: in-process, the Go
#     example trainer, the numpy trainer (tabular_numpy.py) and PyTorch's
#     tabular.py, each per task and in serve mode.
#  c. deep-small FedAvg on Fashion-MNIST (gendata fashion-mnist, α 0.5,
#     3 sites, 600 images per site, seed 1), TR_ROUNDS rounds (5):
#     in-process, the Go example trainer, PyTorch's cnn.py (CUDA when it
#     sees a GPU), each per task and in serve mode. Skipped without Debian's
#     dataset-fashion-mnist (`make fashion-mnist`).
#
# Each row: seconds per round (the campaign's wall_seconds / rounds, the
# stack's start excluded), round 1's seconds and the median of the later
# rounds' (`starter timings`: in serve mode round 1 holds each site's
# process start, the later rounds are the steady state), the final AUC and
# accuracy and their differences from the in-process campaign's; then, for
# each program, whether its serve-mode campaign's final AUC equals its
# per-task one's, and the steady round's ratio to the in-process one's.
#
# The Python rows need Debian's python3-numpy and python3-torch: `make
# bench-trainers` installs them; `make bench-pipeline` leaves them out with
# a note when they are missing. Environment: BIN (bin), BENCH_DIR
# (.run/bench-trainers, wiped), TR_ROUNDS (5).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
OUT=${BENCH_DIR:-.run/bench-trainers}
ROUNDS=${TR_ROUNDS:-5}
for b in starter gendata; do
	[ -x "$BIN/$b" ] || { echo "bench-trainers: $BIN/$b missing; run 'make build'" >&2; exit 1; }
done
rm -rf "$OUT"
mkdir -p "$OUT"
go build -o "$OUT/gotrainer" ./examples/trainers/gotrainer
GOTR=$(cd "$OUT" && pwd)/gotrainer
PY=/usr/bin/python3
EX=$(pwd)/examples/trainers/pytorch
NUMPY=0
TORCH=0
if $PY -c "import numpy" 2>/dev/null; then NUMPY=1; fi
if $PY -c "import torch" 2>/dev/null; then TORCH=1; fi
load() { echo "load: $(uptime | sed 's/.*load average: //') (1, 5, 15 min)"; }

echo "== 6a. the cost of one task"
load
go test -run '^$' -bench '^Benchmark(RunTask|ServeTask)$' -benchtime 100x ./internal/trainerrun/ |
	awk '/BenchmarkRunTask/ {printf "runner, per task, a program that does next to nothing: %.1f ms per task\n", $3/1e6}
	     /BenchmarkServeTask/ {printf "runner, serve mode, the same program already running: %.1f ms per task\n", $3/1e6}'
if [ "$TORCH" = 1 ]; then
	for _ in 1 2 3 4 5; do /usr/bin/time -f "%e" $PY -c "import torch" 2>&1 >/dev/null | tail -1; done |
		sort -n | sed -n 3p | xargs -I{} echo "python3 -c 'import torch': {} s (median of 5)"
else
	echo "python3-torch not installed: the PyTorch rows are left out (make bench-trainers installs it)"
fi

# run NAME ARGS...: one campaign on a fresh data directory, its JSON result
# in $OUT/NAME.json and its rounds' timings in $OUT/NAME-timings.json.
run() {
	local name=$1
	shift
	"$BIN/starter" run --local --data-dir "$OUT/data-$name" --format json "$@" >"$OUT/$name.json" 2>"$OUT/$name.log" ||
		{ echo "bench-trainers: $name failed; see $OUT/$name.log" >&2; tail -5 "$OUT/$name.log" >&2; exit 1; }
	local camp
	camp=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['campaign'])" "$OUT/$name.json")
	"$BIN/starter" timings "$camp" --local --data-dir "$OUT/data-$name" --format json >"$OUT/$name-timings.json" 2>>"$OUT/$name.log" ||
		echo '{"rounds": []}' >"$OUT/$name-timings.json"
}
report() { # report ROUNDS NAME...: the first NAME is the in-process reference
	python3 - "$OUT" "$@" <<'PY'
import json, statistics, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(n):
    r = json.load(open(f"{out}/{n}.json"))
    t = [x["wall_seconds"] for x in json.load(open(f"{out}/{n}-timings.json")).get("rounds", [])]
    r["first"] = t[0] if t else float("nan")
    r["steady"] = statistics.median(t[1:]) if len(t) > 1 else float("nan")
    return r
runs = {n: load(n) for n in names}
ref = runs[names[0]]
print(f"{'campaign':24s} {'s/round':>8s} {'round 1':>8s} {'rounds 2+':>10s}  final AUC (Δ in-process)          final acc")
for n in names:
    r = runs[n]
    line = f"{n:24s} {r['wall_seconds'] / rounds:8.2f} {r['first']:8.2f} {r['steady']:10.3f}"
    line += f"  {r['final_auc']:.10f} (Δ {r['final_auc'] - ref['final_auc']:+.2e})"
    line += f"  {r['final_acc']:.4f} (Δ {r['final_acc'] - ref['final_acc']:+.4f})"
    if "final_acc_aggregate" in r:
        line += f", after aggregation {r['final_acc_aggregate']:.4f} (Δ {r['final_acc_aggregate'] - ref['final_acc_aggregate']:+.4f})"
    print(line)
for n in names:
    if n.endswith("-serve") and n[:-len("-serve")] in runs:
        per, srv = runs[n[:-len("-serve")]], runs[n]
        same = "identical" if per["final_auc"] == srv["final_auc"] and per["auc_curve"] == srv["auc_curve"] else "DIFFERENT"
        print(f"{n}: final AUC and AUC curve {same} to per task; rounds 2+ {srv['steady']:.3f} s = "
              f"{srv['steady'] / ref['steady']:.2f}x in-process ({ref['steady']:.3f} s), {per['steady'] / srv['steady']:.0f}x faster than per task")
PY
}

echo
echo "== 6b. tabular FedAvg, default preset, golden healthcare federation (8 sites), 15 rounds"
load
fed=testdata/paper/healthcare
tab=(--federation "$fed" --method fedavg --rounds 15 --set model=external)
names=(tab-in-process tab-go tab-go-serve)
run tab-in-process --federation "$fed" --method fedavg --rounds 15
run tab-go "${tab[@]}" --set trainer=go --trainer "go=$GOTR"
run tab-go-serve "${tab[@]}" --set trainer=go --trainer-serve "go=$GOTR"
if [ "$NUMPY" = 1 ]; then
	run tab-numpy "${tab[@]}" --set trainer=np --trainer "np=$PY $EX/tabular_numpy.py"
	run tab-numpy-serve "${tab[@]}" --set trainer=np --trainer-serve "np=$PY $EX/tabular_numpy.py"
	names+=(tab-numpy tab-numpy-serve)
fi
if [ "$TORCH" = 1 ]; then
	run tab-pytorch "${tab[@]}" --set trainer=torch --trainer "torch=$PY $EX/tabular.py"
	run tab-pytorch-serve "${tab[@]}" --set trainer=torch --trainer-serve "torch=$PY $EX/tabular.py"
	names+=(tab-pytorch tab-pytorch-serve)
fi
report 15 "${names[@]}"

echo
echo "== 6c. deep-small FedAvg, Fashion-MNIST (α 0.5, 3 sites, 600 images each), $ROUNDS rounds"
if [ ! -d /usr/share/datasets/fashion-mnist ]; then
	echo "dataset-fashion-mnist not installed: skipped (make fashion-mnist)"
	exit 0
fi
load
"$BIN/gendata" fashion-mnist --alpha 0.5 --sites 3 --seed 1 --per-site 600 --out "$OUT/fm" >/dev/null
deep=(--federation "$OUT/fm" --preset deep-small --method fedavg --rounds "$ROUNDS")
names=(deep-in-process deep-go deep-go-serve)
run deep-in-process "${deep[@]}"
run deep-go "${deep[@]}" --set model=external --set trainer=go --trainer "go=$GOTR"
run deep-go-serve "${deep[@]}" --set model=external --set trainer=go --trainer-serve "go=$GOTR"
if [ "$TORCH" = 1 ]; then
	run deep-pytorch "${deep[@]}" --set model=external --set trainer=torch --trainer "torch=$PY $EX/cnn.py"
	run deep-pytorch-serve "${deep[@]}" --set model=external --set trainer=torch --trainer-serve "torch=$PY $EX/cnn.py"
	names+=(deep-pytorch deep-pytorch-serve)
	grep -m1 "cnn.py: torch sees" "$OUT/deep-pytorch.log" || true
fi
report "$ROUNDS" "${names[@]}"
