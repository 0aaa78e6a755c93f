#!/usr/bin/env bash
# Instructions per request of one variant of server.mjs, counted by valgrind's callgrind (exact and
# repeatable, whatever else the machine does): the server is run twice, for SMALL and LARGE requests
# (default 2,000 and 6,000), and the difference divided by LARGE − SMALL removes start-up. Writes the
# two callgrind files to $OUT (default /tmp) for callgrind_annotate. Takes about a minute per variant.
# Valgrind reports no SHA CPU extensions, so OpenSSL's SHA-256 runs its AVX2 code here: the HMAC
# counts more instructions than it costs on a CPU with SHA-NI.
# usage: bench/profile/callgrind.sh <variant> [small] [large]
set -euo pipefail
cd "$(dirname "$0")"
variant=$1
small=${2:-2000}
large=${3:-6000}
out=${OUT:-/tmp}
total() {
  local count=$1 file="$out/callgrind-$variant-$1.out" port_file
  port_file=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$file" node server.mjs "$variant" >"$port_file" 2>"$file.log" &
  local pid=$!
  for _ in $(seq 600); do [ -s "$port_file" ] && break; sleep 0.2; done
  node load.mjs "$(cat "$port_file")" "$count" >/dev/null
  rm -f "$port_file"
  kill -INT "$pid"
  wait "$pid" || true
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$file.log"
}
a=$(total "$small")
b=$(total "$large")
echo "$variant: $(( (b - a) / (large - small) )) instructions per request (callgrind files in $out)"
