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
# Parts 1 (at 8 and 200 sites) and 2 run a second time with Temporal on
# PostgreSQL (Debian's, started by `devstack postgres` in a temporary
# directory; a devstack process with --persistence postgres, to which
# `starter --local` attaches), printed next to the SQLite figures. Set
# BENCH_POSTGRES=0 to leave it out; without Debian's postgresql it is left
# out with a note.
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
PG=${BENCH_POSTGRES:-1}
DEEP_ROUNDS=${DEEP_ROUNDS:-5}
for b in starter devstack gendata; do
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

# PostgreSQL for the second column: one server for the whole run, one pair
# of databases per stack (the devstack creates them).
if [ "$PG" != 0 ] && ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
	echo "bench-pipeline: no PostgreSQL (apt-get install postgresql): the PostgreSQL column is left out" >&2
	PG=0
fi
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "${PGDIR:-}" ] && rm -rf "$PGDIR"
}
trap cleanup EXIT
if [ "$PG" != 0 ]; then
	# Under /tmp: the postgres account must reach the directory.
	PGDIR=$(mktemp -d /tmp/ptopofl-bench-pg-XXXXXX)
	chmod 755 "$PGDIR" # mktemp makes it 0700: the postgres account must enter it
	"$BIN/devstack" postgres --dir "$PGDIR/cluster" >"$OUT/postgres.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 1200); do [ -s "$PGDIR/cluster/postgres.json" ] && break; sleep 0.1; done
	if [ ! -s "$PGDIR/cluster/postgres.json" ]; then
		echo "bench-pipeline: PostgreSQL did not start; see $OUT/postgres.log" >&2
		exit 1
	fi
	PGURL=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$PGDIR/cluster/postgres.json")
fi

# pg_stack DIR NAME: a devstack over DIR with Temporal in databases NAME and
# NAME_vis, in the background; starter --local --data-dir DIR attaches to it.
pg_stack() {
	local base=${PGURL%/*}
	"$BIN/devstack" --data "$1" --ui=false --persistence postgres \
		--postgres-url "$base/$2?visibility=$2_vis" >"$1.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 1200); do
		[ -s "$1/endpoints.json" ] && return 0
		kill -0 $! 2>/dev/null || { echo "bench-pipeline: devstack on PostgreSQL failed; see $1.log" >&2; exit 1; }
		sleep 0.1
	done
	echo "bench-pipeline: devstack on PostgreSQL not ready after 120 s; see $1.log" >&2
	exit 1
}

# per_round K DIR: run the tiny FedAvg campaign on the stack over DIR and
# print wall seconds and ms per round.
per_round() {
	local json
	json=$("$BIN/starter" run --local --data-dir "$2" --federation "$OUT/tiny-$1" \
		--method fedavg --rounds "$ROUNDS" --seed 1 --format json)
	python3 - "$ROUNDS" "$json" <<'PY'
import json, sys
rounds, r = int(sys.argv[1]), json.loads(sys.argv[2])
assert r["state"] == "done" and r["rounds_done"] == rounds, r
print(f"{r['wall_seconds']:.2f} {1000*r['wall_seconds']/rounds:.1f}")
PY
}

echo "== 1. per-round orchestration overhead (fedavg, tiny sites, $ROUNDS rounds)"
load
printf "%6s %8s %12s %12s %12s %12s\n" sites rounds sqlite_s sqlite_ms pg_s pg_ms
for k in 8 50 200; do
	tiny_federation "$OUT/tiny-$k" "$k"
	res=$(per_round "$k" "$OUT/stack-$k")
	read -r sw sr <<<"$res"
	pw=- pr=-
	if [ "$PG" != 0 ] && [ "$k" != 50 ]; then
		pg_stack "$OUT/pgstack-$k" "bench_$k"
		res=$(per_round "$k" "$OUT/pgstack-$k")
		read -r pw pr <<<"$res"
	fi
	printf "%6d %8d %12s %12s %12s %12s\n" "$k" "$ROUNDS" "$sw" "$sr" "$pw" "$pr"
done

echo
echo "== 2. paper table through the pipeline (preset paper, golden seed-42 data, 2 × (6 + 3) campaigns)"
load
variants=(--variant "pTopoFL_M1:ptopofl:clusters=1" --variant "pTopoFL_beta0:ptopofl:beta=0" --variant "pTopoFL_beta1:ptopofl:beta=1")
# paper_table STACKDIR TAG: both scenarios' tables on the stack over STACKDIR.
paper_table() {
for sc in healthcare benchmark; do
	golden="testdata/paper/$sc"
	python3 -c "
import json, sys
cl = json.load(open('$golden/clients.json'))
json.dump({f\"client{c['client']}\": c['subsample_idx'] for c in cl}, open('$OUT/rows-$sc.json', 'w'))
"
	"$BIN/starter" table --local --data-dir "$1" --federation "$golden" \
		--preset paper --rounds 15 --seed 42 --descriptor-rows "$OUT/rows-$sc.json" \
		--methods ptopofl,fedprox,scaffold,pfedme,fedavg,local "${variants[@]}" \
		--parallel "$PARALLEL" --format json >"$OUT/table$2-$sc.json"
done
}
t0=$(date +%s.%N)
paper_table "$OUT/stack-paper" ""
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
if [ "$PG" != 0 ]; then
	pg_stack "$OUT/pgstack-paper" bench_paper
	t0=$(date +%s.%N)
	paper_table "$OUT/pgstack-paper" "-pg"
	t1=$(date +%s.%N)
	python3 - "$OUT" "$t0" "$t1" <<'PY'
import json, sys
out, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
for sc in ("healthcare", "benchmark"):
    a = {r["label"]: r["final_auc"] for r in json.load(open(f"{out}/table-{sc}.json"))["results"]}
    b = {r["label"]: r["final_auc"] for r in json.load(open(f"{out}/table-pg-{sc}.json"))["results"]}
    assert a == b, f"{sc}: AUCs on PostgreSQL differ from SQLite: {a} vs {b}"
print(f"paper table on PostgreSQL, same 18 campaigns: {t1 - t0:.2f} s wall (stack already running); every AUC equal to the SQLite run's")
PY
fi

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
