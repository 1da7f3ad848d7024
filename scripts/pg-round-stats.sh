#!/usr/bin/env bash
# scripts/pg-round-stats.sh: where a tiny FedAvg round goes on PostgreSQL
# (Debian's, started by `devstack postgres` in a temporary directory):
# Temporal's transactions, WAL syncs and WAL records per round (from
# pg_stat_database and pg_stat_wal, around a campaign of ROUNDS rounds after
# a 2-round warm-up), and the round time with synchronous_commit on, off,
# and on again. Environment: K (sites, 8), ROUNDS (10), BIN (bin).
# Needs `make build` and Debian's postgresql; used for docs/results/pipeline-speed.md's
# "Pipeline speed" PostgreSQL paragraph.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(pwd)/${BIN:-bin}
D=$(mktemp -d /tmp/pgm-XXXXXX); chmod 755 $D
K=${K:-8}
ROUNDS=${ROUNDS:-10}
$BIN/devstack postgres --dir $D/cluster > $D/pg.log 2>&1 & PGP=$!
for _ in $(seq 600); do [ -s $D/cluster/postgres.json ] && break; sleep 0.1; done
PGURL=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' $D/cluster/postgres.json)
base=${PGURL%/*}
python3 scripts/tiny-federation.py $D/tiny $K
stat() { psql -qtA "$base/postgres" -c "select (select sum(xact_commit) from pg_stat_database where datname in ('bench','bench_vis')), (select wal_sync from pg_stat_wal), (select wal_records from pg_stat_wal)"; }
onepass() { # TAG SEED
	$BIN/devstack --data $D/stack-$1 --ui=false --persistence postgres --postgres-url "$base/bench?visibility=bench_vis" > $D/stack-$1.log 2>&1 & local SP=$!
	for _ in $(seq 1200); do [ -s $D/stack-$1/endpoints.json ] && break; sleep 0.1; done
	# warm-up campaign, not counted
	$BIN/starter run --local --data-dir $D/stack-$1 --federation $D/tiny --method fedavg --rounds 2 --seed $((90 + $2)) --format json >/dev/null
	a=$(stat)
	json=$($BIN/starter run --local --data-dir $D/stack-$1 --federation $D/tiny --method fedavg --rounds $ROUNDS --seed $2 --format json)
	b=$(stat)
	python3 - "$1" "$a" "$b" "$json" $ROUNDS <<'PY'
import json, sys
tag, a, b, r, n = sys.argv[1], [int(x) for x in sys.argv[2].split("|")], [int(x) for x in sys.argv[3].split("|")], json.loads(sys.argv[4]), int(sys.argv[5])
print(f"{tag}: {1000*r['wall_seconds']/n:.1f} ms/round; per round {(b[0]-a[0])/n:.1f} transactions, {(b[1]-a[1])/n:.1f} WAL syncs, {(b[2]-a[2])/n:.0f} WAL records")
PY
	kill $SP; wait $SP 2>/dev/null || true
}
onepass sync-on 1
psql -qtA "$base/postgres" -c "alter database bench set synchronous_commit = off" -c "alter database bench_vis set synchronous_commit = off"
onepass sync-off 2
psql -qtA "$base/postgres" -c "alter database bench reset synchronous_commit" -c "alter database bench_vis reset synchronous_commit"
onepass sync-on-again 3
kill $PGP; wait $PGP 2>/dev/null || true
rm -rf $D
