#!/usr/bin/env bash
# Configures one build folder for one purpose, forcing every option that purpose depends on, so that a folder
# configured before for another purpose (say, the demo's) cannot silently carry its options over.
# Usage: configure.sh release|asan|fuzz BUILD_DIR
#   release  Release build of the binary and every test (the demo builds only its `pagoda` target from it)
#   asan     RelWithDebInfo with ASan+UBSan, unit and golden tests
#   fuzz     clang, libFuzzer targets only
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:?usage: configure.sh release|asan|fuzz BUILD_DIR}"
dir="${2:?usage: configure.sh release|asan|fuzz BUILD_DIR}"
case "$mode" in
  release) cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_BUILD_TESTS=ON \
             -DPAGODA_SANITIZE=OFF -DPAGODA_FUZZ=OFF >/dev/null ;;
  asan)    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPAGODA_BUILD_TESTS=ON \
             -DPAGODA_SANITIZE=ON -DPAGODA_FUZZ=OFF >/dev/null ;;
  fuzz)    CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPAGODA_BUILD_TESTS=OFF \
             -DPAGODA_SANITIZE=OFF -DPAGODA_FUZZ=ON >/dev/null ;;
  *) echo "configure.sh: unknown mode '$mode' (release, asan or fuzz)" >&2; exit 2 ;;
esac
