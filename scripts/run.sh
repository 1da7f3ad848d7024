#!/usr/bin/env bash
# make run: the demo on the embedded default. Generates the healthcare
# federation (8 sites, sites 1 and 5 adversarial) if missing, runs pTopoFL
# and every baseline as durable campaigns on one local stack (embedded
# Temporal + S3 over .run/local), and prints the results table and where the
# artifacts and manifests are. Re-running resumes: finished campaigns are
# re-attached, not re-run.
#
# Environment: RUN_DIR (default .run), ROUNDS (15), SEED (42), PRESET
# (default), METHODS (all), PARALLEL (3).
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
RUN_DIR=${RUN_DIR:-.run}
ROUNDS=${ROUNDS:-15}
SEED=${SEED:-42}
PRESET=${PRESET:-default}
PARALLEL=${PARALLEL:-3}
METHODS=${METHODS:-ptopofl,fedavg,fedprox,scaffold,pfedme,local,median,trimmed-mean,krum,foolsgold,norm-clip}
FED="$RUN_DIR/federation"
DATA="$RUN_DIR/local"

for b in starter gendata; do
	if [ ! -x "$BIN/$b" ]; then
		echo "run.sh: $BIN/$b missing; run 'make build' first" >&2
		exit 1
	fi
done

if [ ! -f "$FED/federation.json" ]; then
	echo "== generating the healthcare federation (8 sites, sites 1 and 5 adversarial) in $FED"
	"$BIN/gendata" healthcare --seed 42 --out "$FED"
fi

echo "== running $METHODS on the local stack ($DATA), $ROUNDS rounds, preset $PRESET"
"$BIN/starter" table --local --data-dir "$DATA" --federation "$FED" \
	--methods "$METHODS" --rounds "$ROUNDS" --seed "$SEED" --preset "$PRESET" --parallel "$PARALLEL"

echo
echo "federation  $FED (federation.json says which sites are adversarial)"
echo "per-round audit of a campaign:  $BIN/starter history CAMPAIGN --local --data-dir $DATA"
echo "all campaigns:                  $BIN/starter ls --local --data-dir $DATA"
