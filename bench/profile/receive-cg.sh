#!/usr/bin/env bash
# Instructions per event of one variant of receive.mjs (core's receiving path without HTTP), counted
# by valgrind's callgrind: two runs over the same signed pool, measuring SMALL and LARGE events after
# a WARMUP (defaults 5,000, 25,000 and 10,000); the difference divided by LARGE − SMALL removes
# start-up, warm-up and the pool's signing. Node runs with NODE_FLAGS (default --single-threaded: no
# concurrent compiler or GC threads, so two runs count nearly the same). CORE_DIST compares another
# build of core (see receive.mjs). Writes the callgrind files to $OUT (default /tmp).
# usage: bench/profile/receive-cg.sh <variant> [small] [large] [warmup]
set -euo pipefail
cd "$(dirname "$0")"
variant=$1
small=${2:-5000}
large=${3:-25000}
warmup=${4:-10000}
out=${OUT:-/tmp}
flags=${NODE_FLAGS---single-threaded}
pool=$((warmup + large))
tag=${TAG:-$variant}
total() {
  local file="$out/callgrind-receive-$tag-$1.out"
  # shellcheck disable=SC2086
  valgrind --tool=callgrind --callgrind-out-file="$file" node $flags receive.mjs "$variant" "$1" "$warmup" "$pool" >/dev/null 2>"$file.log"
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$file.log"
}
a=$(total "$small")
b=$(total "$large")
echo "$tag: $(( (b - a) / (large - small) )) instructions per event (callgrind files in $out)"
