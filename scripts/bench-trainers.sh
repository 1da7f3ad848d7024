#!/usr/bin/env bash
# make bench-trainers (and part 6 of make bench-pipeline): sites that train
# with their own program under the trainer protocol ptopofl.trainer/v1
# (model "external", one process per task), against our in-process models
# on the same federation, on the local stack (`starter run --local`).
#
#  a. The cost of one task's process: the runner's own (a program that
#     does next to nothing: BenchmarkRunTask, internal/trainer), and
#     `python3 -c "import torch"` (median of 5) when PyTorch is installed.
#  b. Tabular FedAvg, default preset, the golden healthcare federation
#     (testdata/paper/healthcare, 8 sites), 15 rounds: in-process, the Go
#     example trainer, PyTorch's tabular.py. Final AUC, its difference from
#     the in-process one, seconds per round (the campaign's wall_seconds /
#     rounds: the stack's start excluded).
#  c. deep-small FedAvg on Fashion-MNIST (gendata fashion-mnist, α 0.5,
#     3 sites, 600 images per site, seed 1), TR_ROUNDS rounds (5):
#     in-process, the Go example trainer, PyTorch's cnn.py (CUDA when it
#     sees a GPU). Final accuracy after aggregation and of the sites'
#     updates, differences, seconds per round. Skipped without Debian's
#     dataset-fashion-mnist (`make fashion-mnist`).
#
# The PyTorch rows need Debian's python3-torch: `make bench-trainers`
# installs it; `make bench-pipeline` leaves them out with a note when it is
# missing. Environment: BIN (bin), BENCH_DIR (.run/bench-trainers, wiped),
# TR_ROUNDS (5).
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
TORCH=0
if $PY -c "import torch" 2>/dev/null; then TORCH=1; fi
load() { echo "load: $(uptime | sed 's/.*load average: //') (1, 5, 15 min)"; }

echo "== 6a. the cost of one task's process"
load
go test -run '^$' -bench '^BenchmarkRunTask$' -benchtime 100x ./internal/trainer/ | awk '/BenchmarkRunTask/ {printf "runner, a program that does next to nothing: %.1f ms per task\n", $3/1e6}'
if [ "$TORCH" = 1 ]; then
	for _ in 1 2 3 4 5; do /usr/bin/time -f "%e" $PY -c "import torch" 2>&1 >/dev/null | tail -1; done |
		sort -n | sed -n 3p | xargs -I{} echo "python3 -c 'import torch': {} s (median of 5)"
else
	echo "python3-torch not installed: the PyTorch rows are left out (make bench-trainers installs it)"
fi

# run NAME ARGS...: one campaign on a fresh data directory, its JSON result in $OUT/NAME.json.
run() {
	local name=$1
	shift
	"$BIN/starter" run --local --data-dir "$OUT/data-$name" --format json "$@" >"$OUT/$name.json" 2>"$OUT/$name.log" ||
		{ echo "bench-trainers: $name failed; see $OUT/$name.log" >&2; tail -5 "$OUT/$name.log" >&2; exit 1; }
}
report() { # report ROUNDS NAME...: the first NAME is the in-process reference
	python3 - "$OUT" "$@" <<'PY'
import json, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
ref = json.load(open(f"{out}/{names[0]}.json"))
for n in names:
    r = json.load(open(f"{out}/{n}.json"))
    line = f"{n:22s} {r['wall_seconds'] / rounds:7.2f} s/round  final AUC {r['final_auc']:.10f} (Δ {r['final_auc'] - ref['final_auc']:+.2e})"
    line += f"  final acc {r['final_acc']:.4f} (Δ {r['final_acc'] - ref['final_acc']:+.4f})"
    if "final_acc_aggregate" in r:
        line += f"  after aggregation {r['final_acc_aggregate']:.4f} (Δ {r['final_acc_aggregate'] - ref['final_acc_aggregate']:+.4f})"
    print(line)
PY
}

echo
echo "== 6b. tabular FedAvg, default preset, golden healthcare federation, 15 rounds"
load
fed=testdata/paper/healthcare
names=(tab-in-process tab-go)
run tab-in-process --federation "$fed" --method fedavg --rounds 15
run tab-go --federation "$fed" --method fedavg --rounds 15 --set model=external --set trainer=go --trainer "go=$GOTR"
if [ "$TORCH" = 1 ]; then
	run tab-pytorch --federation "$fed" --method fedavg --rounds 15 --set model=external --set trainer=torch \
		--trainer "torch=$PY $(pwd)/examples/trainers/pytorch/tabular.py"
	names+=(tab-pytorch)
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
names=(deep-in-process deep-go)
run deep-in-process --federation "$OUT/fm" --preset deep-small --method fedavg --rounds "$ROUNDS"
run deep-go --federation "$OUT/fm" --preset deep-small --method fedavg --rounds "$ROUNDS" --set model=external --set trainer=go --trainer "go=$GOTR"
if [ "$TORCH" = 1 ]; then
	run deep-pytorch --federation "$OUT/fm" --preset deep-small --method fedavg --rounds "$ROUNDS" --set model=external --set trainer=torch \
		--trainer "torch=$PY $(pwd)/examples/trainers/pytorch/cnn.py"
	names+=(deep-pytorch)
	grep -m1 "running on" "$OUT/deep-pytorch.log" || true
fi
report "$ROUNDS" "${names[@]}"
