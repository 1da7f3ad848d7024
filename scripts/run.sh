#!/usr/bin/env bash
# make run: the demo on the embedded default. Generates the healthcare
# federation (8 sites, sites 1 and 5 adversarial) if missing, runs pTopoFL
# and every baseline as durable campaigns on one local stack (embedded
# Temporal + S3 over .run/local), and prints the results table and where the
# artifacts and manifests are. Re-running resumes: finished campaigns are
# re-attached, not re-run.
#
# The stack runs as its own process (bin/devstack) so that the Temporal Web
# UI it serves stays up after the results are printed, with its URL, and
# the campaign console (starter console) beside it, started before the
# campaigns so that they can be watched live; stop both with the kill
# command printed. UI=0 runs the stack inside the starter instead, stopped
# when it exits, with no UI and no console.
#
# Environment: RUN_DIR (default .run), ROUNDS (15), SEED (42), PRESET
# (default), METHODS (all), PARALLEL (3), UI (1).
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
RUN_DIR=${RUN_DIR:-.run}
ROUNDS=${ROUNDS:-15}
SEED=${SEED:-42}
PRESET=${PRESET:-default}
PARALLEL=${PARALLEL:-3}
UI=${UI:-1}
METHODS=${METHODS:-ptopofl,fedavg,fedprox,scaffold,pfedme,local,median,trimmed-mean,krum,foolsgold,norm-clip}
FED="$RUN_DIR/federation"
DATA="$RUN_DIR/local"

for b in starter gendata devstack; do
	if [ ! -x "$BIN/$b" ]; then
		echo "run.sh: $BIN/$b missing; run 'make build' first" >&2
		exit 1
	fi
done

if [ ! -f "$FED/federation.json" ]; then
	echo "== generating the healthcare federation (8 sites, sites 1 and 5 adversarial) in $FED"
	"$BIN/gendata" healthcare --seed 42 --out "$FED"
fi

# stack_pid prints the PID of the devstack serving $DATA, if one is alive.
stack_pid() {
	local pid
	pid=$(sed -n 's/.*"pid": *\([0-9][0-9]*\).*/\1/p' "$DATA/endpoints.json" 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = devstack ]; then
		echo "$pid"
	fi
}
stack_started=0
if [ "$UI" != 0 ] && [ -z "$(stack_pid)" ]; then
	stack_started=1
	mkdir -p "$DATA"
	rm -f "$DATA/endpoints.json"
	nohup "$BIN/devstack" --data "$DATA" >"$RUN_DIR/devstack.log" 2>&1 &
	for _ in $(seq 1200); do
		[ -n "$(stack_pid)" ] && break
		if ! kill -0 $! 2>/dev/null; then
			echo "run.sh: the local stack did not start; see $RUN_DIR/devstack.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	if [ -z "$(stack_pid)" ]; then
		echo "run.sh: the local stack is not ready after 120 s; see $RUN_DIR/devstack.log" >&2
		exit 1
	fi
fi

# console_pid prints the PID of the console serving $DATA, if one is alive.
console_pid() {
	local pid
	pid=$(cat "$RUN_DIR/console.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q " console "; then
		echo "$pid"
	fi
}
console_url() { sed -n 's/^console \(http[^ ]*\)$/\1/p' "$RUN_DIR/console.out" 2>/dev/null | head -1; }
if [ "$stack_started" = 1 ] && [ -n "$(console_pid)" ]; then
	kill "$(console_pid)" # it served the stack that is gone
	sleep 0.5
fi
if [ "$UI" != 0 ] && [ -z "$(console_pid)" ]; then
	nohup "$BIN/starter" console --local --data-dir "$DATA" >"$RUN_DIR/console.out" 2>"$RUN_DIR/console.log" &
	echo $! >"$RUN_DIR/console.pid"
	for _ in $(seq 600); do
		[ -n "$(console_url)" ] && break
		if ! kill -0 "$(cat "$RUN_DIR/console.pid")" 2>/dev/null; then
			echo "run.sh: the console did not start; see $RUN_DIR/console.log" >&2
			break
		fi
		sleep 0.1
	done
fi
if [ "$UI" != 0 ] && [ -n "$(console_url)" ]; then
	echo "== campaign console: $(console_url) (the campaigns below appear there as they run)"
fi

echo "== running $METHODS on the local stack ($DATA), $ROUNDS rounds, preset $PRESET"
"$BIN/starter" table --local --data-dir "$DATA" --federation "$FED" \
	--methods "$METHODS" --rounds "$ROUNDS" --seed "$SEED" --preset "$PRESET" --parallel "$PARALLEL"

echo
echo "federation  $FED (federation.json says which sites are adversarial)"
echo "per-round audit of a campaign:  $BIN/starter history CAMPAIGN --local --data-dir $DATA"
echo "all campaigns:                  $BIN/starter ls --local --data-dir $DATA"
if [ "$UI" != 0 ] && [ -n "$(stack_pid)" ]; then
	ui=$(sed -n 's/.*"ui": *"\([^"]*\)".*/\1/p' "$DATA/endpoints.json")
	if [ -n "$ui" ]; then
		echo "Temporal Web UI:                $ui/namespaces/default/workflows"
	else
		echo "Temporal Web UI:                none (the running local stack was started with --ui=false)"
	fi
	if [ -n "$(console_pid)" ] && [ -n "$(console_url)" ]; then
		echo "campaign console:               $(console_url)"
	fi
	echo "the local stack and the console keep serving; stop them with:  kill $(stack_pid) $(console_pid)"
fi
