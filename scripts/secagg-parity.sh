#!/usr/bin/env bash
# scripts/secagg-parity.sh: FedAvg and pTopoFL with and without
# secure_aggregation secagg+ on held-out healthcare federations (gendata
# healthcare, seeds SEEDS, 8 sites, 2 adversarial), ROUNDS rounds, default
# preset, on one local stack: each campaign's final AUC and the difference
# secure − plain, and the round-1 groups of the secure pTopoFL campaign.
#
# Environment: OUT (default .run/secagg-parity, wiped), SEEDS ("1 2 3 4
# 5"), ROUNDS (15), BIN (bin).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
OUT=${OUT:-.run/secagg-parity}
SEEDS=${SEEDS:-1 2 3 4 5}
ROUNDS=${ROUNDS:-15}
for b in starter gendata; do
	[ -x "$BIN/$b" ] || { echo "secagg-parity: $BIN/$b missing; run 'make build'" >&2; exit 1; }
done
rm -rf "$OUT"
mkdir -p "$OUT"
printf '%5s  %-8s  %9s  %9s  %9s  %s\n' seed method plain secagg+ diff "round-1 groups (secagg+)"
for seed in $SEEDS; do
	fed="$OUT/fed-$seed"
	"$BIN/gendata" healthcare --seed "$seed" --sites 8 --out "$fed" >/dev/null
	for m in fedavg ptopofl; do
		p=$("$BIN/starter" run --local --data-dir "$OUT/stack" --federation "$fed" --method "$m" --rounds "$ROUNDS" \
			--seed 1 --campaign "p-$m-$seed" --format json 2>>"$OUT/log")
		s=$("$BIN/starter" run --local --data-dir "$OUT/stack" --federation "$fed" --method "$m" --rounds "$ROUNDS" \
			--seed 1 --campaign "s-$m-$seed" --set secure_aggregation=secagg+ --format json 2>>"$OUT/log")
		g=$("$BIN/starter" history "s-$m-$seed" --local --data-dir "$OUT/stack" 2>>"$OUT/log" | awk '/^ +[0-9]+  /{r=$1} r==1 && /secagg /{print $2, $3}' | paste -sd' ' -)
		python3 - "$seed" "$m" "$p" "$s" "$g" <<'PY'
import json, sys
seed, m, p, s, g = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5]
assert p["state"] == "done" and s["state"] == "done", (p["state"], s["state"])
print(f"{seed:>5}  {m:<8}  {p['final_auc']:9.5f}  {s['final_auc']:9.5f}  {s['final_auc'] - p['final_auc']:+9.5f}  {g}")
PY
	done
done
