#!/usr/bin/env bash
# Runs kv_events_test.py with a python3 that has Debian's python3-zmq and python3-msgpack (they live in
# /usr/bin/python3, which need not be first on PATH).
# Usage: run_kv_events_test.sh PAGODA SHARED_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for c in python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import zmq, msgpack' 2>/dev/null; then
    exec "$c" "$here/kv_events_test.py" "$@"
  fi
done
echo "run_kv_events_test.sh: no python3 with zmq and msgpack (install python3-zmq python3-msgpack: scripts/install-deps.sh)" >&2
exit 1
