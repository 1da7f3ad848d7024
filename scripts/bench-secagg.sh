#!/usr/bin/env bash
# make bench-secagg: the cost of secure aggregation (secure_aggregation
# "secagg+", issue 37) on the local stack (`starter run --local`, every
# site in process): FedAvg on tiny sites (scripts/tiny-federation.py: 16
# train / 8 test rows, 4 features) at 8, 50 and 200 sites, BENCH_ROUNDS
# rounds with and without secagg+, each on a fresh stack. Per round: wall
# time (campaign wall time / rounds, stack start excluded) and the bytes
# the round wrote to S3 (every object under the campaign's round-NNNN/
# folders, from the stack's S3 directory, divided by the rounds), and the
# ratios secure / plain. The issue's target is a secure round at most 3
# times a plain one at 200 sites.
#
# Environment: BENCH_DIR (default .run/bench-secagg, wiped), BENCH_ROUNDS
# (5), BENCH_SITES ("8 50 200"), BIN (bin, where starter is).
#
# The machine's load is printed first: on 2 cores anything else running
# shifts these figures by tens of per cent.
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
OUT=${BENCH_DIR:-.run/bench-secagg}
ROUNDS=${BENCH_ROUNDS:-5}
SITES=${BENCH_SITES:-8 50 200}
[ -x "$BIN/starter" ] || { echo "bench-secagg: $BIN/starter missing; run 'make build'" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-secagg: python3 needed for the tiny federations" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT"
echo "load: $(uptime | sed 's/.*load average: //') (1, 5, 15 min)"

# run K MODE: one campaign of ROUNDS rounds over the tiny federation of K
# sites on a fresh stack; prints "seconds_per_round bytes_per_round".
run() {
	local k=$1 mode=$2 dir="$OUT/stack-$1-$2" json
	local extra=()
	[ "$mode" = secagg ] && extra=(--set secure_aggregation=secagg+)
	json=$("$BIN/starter" run --local --data-dir "$dir" --federation "$OUT/tiny-$k" \
		--method fedavg --rounds "$ROUNDS" --seed 1 --format json "${extra[@]}" 2>"$dir.log")
	python3 - "$ROUNDS" "$json" "$dir/s3" <<'PY'
import json, os, sys
rounds, r, s3 = int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
assert r["state"] == "done" and r["rounds_done"] == rounds, r
prefix = r["artifacts"].split("/", 3)[3]  # campaigns/<name>/
root = os.path.join(s3, r["artifacts"].split("/")[2], prefix)
total = 0
for d, _, files in os.walk(root):
    if "/round-" in d + "/":
        total += sum(os.path.getsize(os.path.join(d, f)) for f in files)
print(f"{r['wall_seconds'] / rounds:.4f} {total / rounds:.0f}")
PY
}

printf '%6s  %14s  %14s  %6s  %14s  %14s  %6s\n' sites "plain s/round" "secagg s/round" ratio "plain B/round" "secagg B/round" ratio
for k in $SITES; do
	python3 scripts/tiny-federation.py "$OUT/tiny-$k" "$k"
	read -r pt pb <<<"$(run "$k" plain)"
	read -r st sb <<<"$(run "$k" secagg)"
	python3 - "$k" "$pt" "$st" "$pb" "$sb" <<'PY'
import sys
k, pt, st, pb, sb = sys.argv[1], *map(float, sys.argv[2:])
print(f"{k:>6}  {pt:14.3f}  {st:14.3f}  {st / pt:6.2f}  {pb:14.0f}  {sb:14.0f}  {sb / pb:6.2f}")
PY
done
