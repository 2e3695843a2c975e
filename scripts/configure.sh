#!/usr/bin/env bash
# Configures one build folder for one purpose, forcing every option that purpose depends on, so that a folder
# configured before for another purpose (say, the demo's) cannot silently carry its options over.
# Usage: configure.sh release|sanitize BUILD_DIR
#   release   Release build of the binaries (pagoda, pagoda-localai) and every test (the demo builds only its `pagoda`
#             target from it)
#   sanitize  clang, -O2 with line tables, ASan+UBSan and libFuzzer's coverage: one tree (one compile of the
#             library) for both the unit and golden tests under the sanitizers and the libFuzzer targets
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:?usage: configure.sh release|sanitize BUILD_DIR}"
dir="${2:?usage: configure.sh release|sanitize BUILD_DIR}"
case "$mode" in
  release) cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_BUILD_TESTS=ON \
             -DPAGODA_SANITIZE=OFF -DPAGODA_FUZZ=OFF -DPAGODA_LOCALAI=ON >/dev/null ;;
  sanitize) CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
             "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" -DPAGODA_BUILD_TESTS=ON \
             -DPAGODA_SANITIZE=ON -DPAGODA_FUZZ=ON -DPAGODA_LOCALAI=ON >/dev/null ;;
  *) echo "configure.sh: unknown mode '$mode' (release or sanitize)" >&2; exit 2 ;;
esac
