#!/usr/bin/env bash
# bench-tda: times bin/tda diagram against Debian's ripser (float32, the
# fastest Vietoris–Rips implementation packaged here) on the same clouds, in
# one run, and prints wall time, peak memory and the ratio ours/ripser.
#
# Each tool runs REPEAT times per cloud; the best wall time and the peak RSS
# of that run are reported (best-of-N filters out noise from other load).
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT=${REPEAT:-3}
OUT=${OUT:-out/bench-tda}
mkdir -p "$OUT"

need_apt=()
command -v ripser >/dev/null 2>&1 || need_apt+=(ripser)
[ -x /usr/bin/time ] || need_apt+=(time)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]} from Debian" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
[ -x bin/tda ] || go build -o bin/ ./cmd/tda
[ -x bin/gendata ] || go build -o bin/ ./cmd/gendata

# The 500- and 1000-point clouds are testdata/ph's; gendata writes those
# same bytes for any size, so the 2000-point cloud comes from it.
clouds=(testdata/ph/blobs_d20_n500_s1.csv testdata/ph/blobs_d20_n1000_s1.csv)
gen="$OUT/blobs_d20_n2000_s1.csv"
if [ ! -s "$gen" ]; then
  bin/gendata clouds --seed 1 --d 20 --n 2000 --out "$OUT" >/dev/null
fi
clouds+=("$gen")

# measure CMD...: prints "<seconds> <KiB>" of the fastest of REPEAT runs.
measure() {
  local best_t="" best_m=""
  for _ in $(seq "$REPEAT"); do
    local line
    line=$( { /usr/bin/time -f "%e %M" "$@" >/dev/null; } 2>&1 | tail -1 )
    local t=${line% *} m=${line#* }
    if [ -z "$best_t" ] || awk -v a="$t" -v b="$best_t" 'BEGIN{exit !(a<b)}'; then
      best_t=$t; best_m=$m
    fi
  done
  echo "$best_t $best_m"
}

printf "%-28s %10s %10s %10s %10s %8s %8s\n" cloud ours_s ripser_s ours_MiB ripser_MiB t_ratio m_ratio
for c in "${clouds[@]}"; do
  read -r ot om < <(measure bin/tda diagram --dim 1 "$c")
  read -r rt rm < <(measure ripser --format point-cloud --dim 1 "$c")
  awk -v c="$(basename "$c")" -v ot="$ot" -v rt="$rt" -v om="$om" -v rm="$rm" 'BEGIN{
    printf "%-28s %10.3f %10.3f %10.1f %10.1f %8.2f %8.2f\n", c, ot, rt, om/1024, rm/1024, ot/rt, om/rm }'
done
