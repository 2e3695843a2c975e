#!/bin/sh
# LocalAI's entry point for the pagoda backend: LocalAI runs `run.sh --addr 127.0.0.1:<port>` from the backend's
# folder (<backends-path>/pagoda/, or the file named by --external-grpc-backends pagoda:/path/to/run.sh).
# The folder holds this file, the pagoda-localai binary and, optionally, lib/ with the shared libraries it needs
# on a machine without Debian's packages. exec keeps pagoda-localai LocalAI's direct child (its parent watch and
# LocalAI's stop signal depend on it). See docs/localai.md.
CURDIR="$(cd "$(dirname "$0")" && pwd)"
if [ -d "$CURDIR/lib" ]; then
  export LD_LIBRARY_PATH="$CURDIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
exec "$CURDIR/pagoda-localai" "$@"
