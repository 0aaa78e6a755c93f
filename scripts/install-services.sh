#!/usr/bin/env bash
# Installs what the tests need from Debian's packages, when missing: the database servers they
# start, PostgreSQL 15 (/usr/lib/postgresql/15/bin) and Redis 7 (redis-server), and strace, which
# test/store/sqlite-durability.test.ts uses to see the WAL syncs. Run as root or with sudo.
# The tests start their own servers on free ports with data in temporary folders; nothing is
# configured or started here (Debian may start a default service, which the tests do not use).
set -euo pipefail

missing=()
[ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql-15)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v strace >/dev/null 2>&1 || missing+=(strace)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-services: PostgreSQL 15, redis-server and strace are installed"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install-services: ${missing[*]} missing; run this script as root (apt-get needs it)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-services: ${missing[*]} missing and apt-get is not available; install PostgreSQL 15 and Redis 7 yourself" >&2
  exit 1
fi

echo "install-services: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
