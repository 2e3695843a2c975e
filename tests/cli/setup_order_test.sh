#!/usr/bin/env bash
# The README's two commands share build/: the demo's configuration must never turn the test command into a run
# that tests nothing (it once did: the demo configured build/ without tests, the test command reused that cache,
# and ctest passed on "No tests were found"). Checks, on a scratch build folder:
#   1. the guard works: on a folder configured without tests, `ctest --no-tests=error` fails;
#   2. scripts/configure.sh release, run after that, brings the tests back (ctest lists them);
#   3. the scripts use it: demo.sh and test.sh configure through configure.sh, and every ctest in test.sh
#      carries --no-tests=error;
#   4. configuring a folder again changes no compile command: the second command of the README after the first must
#      not rebuild what the first built (libzmq's pkg-config flags once moved between a first and a later configure,
#      and the demo after the test command recompiled the whole library).
# Usage: setup_order_test.sh SOURCE_DIR
set -u
src="$(cd "$1" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/test_lib.sh"

# 1. Configured the way the old demo did it: no tests, and ctest must say so with an error.
cmake -S "$src" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_BUILD_TESTS=OFF >/dev/null 2>&1 ||
  bad "configure without tests failed"
if ctest --test-dir "$tmp/build" --no-tests=error >/dev/null 2>&1; then bad "ctest --no-tests=error passed on a folder without tests"; else ok; fi

# 2. The test command's configure on the same folder forces the tests back on.
bash "$src/scripts/configure.sh" release "$tmp/build" >/dev/null 2>&1 || bad "configure.sh release failed"
listed="$(ctest --test-dir "$tmp/build" -N 2>&1)"
echo "$listed" | grep -qE "Total Tests: [1-9]" && ok || bad "no tests after configure.sh release: $listed"
echo "$listed" | grep -q "cli_tests" && echo "$listed" | grep -q "server_tests" && ok || bad "tests missing: $listed"
grep -q "PAGODA_SANITIZE:BOOL=OFF" "$tmp/build/CMakeCache.txt" && ok || bad "configure.sh release left PAGODA_SANITIZE on"

# 3. The scripts themselves.
grep -q "configure.sh release build" "$src/scripts/demo.sh" && ok || bad "demo.sh does not configure through configure.sh"
grep -q "configure.sh release build" "$src/scripts/test.sh" && ok || bad "test.sh does not configure through configure.sh"
while IFS= read -r line; do
  case "$line" in *--no-tests=error*) ok ;; *) bad "test.sh runs ctest without --no-tests=error: $line" ;; esac
done < <(grep -E '^\s*(ASAN_OPTIONS=.*\\$)?\s*ctest ' "$src/scripts/test.sh"; grep -E '^\s+ctest ' "$src/scripts/test.sh")
[ "$(grep -cE 'ctest ' "$src/scripts/test.sh")" -ge 2 ] && ok || bad "test.sh runs fewer than two ctest phases"

# 4. A fresh folder, configured twice: the same compile commands.
bash "$src/scripts/configure.sh" release "$tmp/twice" >/dev/null 2>&1 || bad "configure.sh release (fresh) failed"
cp "$tmp/twice/compile_commands.json" "$tmp/first.json"
bash "$src/scripts/configure.sh" release "$tmp/twice" >/dev/null 2>&1 || bad "configure.sh release (again) failed"
if cmp -s "$tmp/first.json" "$tmp/twice/compile_commands.json"; then ok; else
  bad "a second configure changed compile commands: $(diff "$tmp/first.json" "$tmp/twice/compile_commands.json" | head -4)"
fi

finish_tests
