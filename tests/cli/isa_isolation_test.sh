#!/usr/bin/env bash
# No AVX-512 instruction can run on a CPU without AVX-512 through the linker's choice of an inline function's copy.
# Every AVX-512 object of the build (src/kernels/cpu/*_avx512.cpp) is read: a WEAK function it defines may be the
# copy the linker keeps for every caller, so it must hold no EVEX-encoded instruction (opcode byte 0x62, which in
# 64-bit mode is only EVEX) unless its name is in that object's own namespace (isa_avx512, see
# src/kernels/cpu/isa_namespace.h). The exported entry points (quant_dot_avx512, ...) are GLOBAL, unique by
# definition, and called only after a CPU check.
# Usage: isa_isolation_test.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: isa_isolation_test.sh BUILD_DIR}"
mapfile -t objects < <(find "$build" -name '*_avx512.cpp.o' | sort)
[ ${#objects[@]} -gt 0 ] || { echo "isa_isolation_test: no *_avx512.cpp.o under $build" >&2; exit 1; }
bad=0 checked=0
for o in "${objects[@]}"; do
  # symbol -> count of EVEX instructions, for every WEAK FUNC defined here
  while read -r count sym; do
    checked=$((checked + 1))
    case "$sym" in *isa_avx512*) continue ;; esac
    if [ "$count" -gt 0 ]; then
      echo "FAIL: $(basename "$o"): WEAK $(echo "$sym" | c++filt | cut -c1-160) holds $count AVX-512 (EVEX) instructions" >&2
      bad=$((bad + 1))
    fi
  done < <(
    weak="$(readelf -sW "$o" | awk '$4 == "FUNC" && $5 == "WEAK" && $7 != "UND" {print $8}' | sort -u)"
    objdump -d "$o" | awk -v list="$weak" '
      BEGIN { n = split(list, w, "\n"); for (i = 1; i <= n; i++) want[w[i]] = 1 }
      /^[0-9a-f]+ <.*>:$/ { name = $2; sub(/^</, "", name); sub(/>:$/, "", name); cur = (name in want) ? name : ""; if (cur != "") seen[cur] = 0; next }
      cur != "" && split($0, f, "\t") >= 3 && f[2] ~ /^62 / { seen[cur]++ }
      END { for (s in seen) print seen[s], s }')
done
echo "isa_isolation_test: ${#objects[@]} AVX-512 objects, $checked weak functions checked, $bad holding AVX-512 code outside isa_avx512"
[ "$bad" -eq 0 ]
