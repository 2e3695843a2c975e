#!/usr/bin/env bash
# Packs what the GPU forward-pass check needs into .cuda-carry/ (git-ignored through .git/info/exclude), for a GPU
# machine whose image has the driver but none of the CPU build's Debian libraries: the binaries of a
# -DPAGODA_CUDA=ON build made here (cudart linked in statically), the shared libraries they load that are not the C
# library's own or the image's (libstdc++, libssl, zlib), and the ../shared files the tests read.
# Usage: bash scripts/cuda/pack_for_device.sh BUILD_DIR   (then `run` with carry [".cuda-carry"] and
#        bash scripts/cuda/device_forward_check.sh $OUT there)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:?usage: pack_for_device.sh BUILD_DIR}"
rm -rf .cuda-carry && mkdir -p .cuda-carry/lib .cuda-carry/shared/models/quant .cuda-carry/shared/models/arch \
  .cuda-carry/shared/golden .cuda-carry/shared/vocab
grep -qx '/.cuda-carry/' .git/info/exclude || echo '/.cuda-carry/' >> .git/info/exclude
cp "$build/pagoda" "$build/tests/pagoda_cuda_forward_tests" .cuda-carry/
for b in pagoda tests/pagoda_cuda_forward_tests; do ldd "$build/$b"; done | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libresolv|libstdc\+\+|libgcc_s|libz|libssl|libcrypto)\.so' |
  xargs -I{} cp -L {} .cuda-carry/lib/
# Smaller to carry (the tree that travels is limited to 64 MiB): symbols stripped, libraries in one xz archive.
strip .cuda-carry/pagoda .cuda-carry/pagoda_cuda_forward_tests
tar -C .cuda-carry -cJf .cuda-carry/lib.tar.xz lib && rm -rf .cuda-carry/lib
s=../shared
cp "$s/models/stories260K.gguf" .cuda-carry/shared/models/
cp "$s/models/quant/stories260K-Q8_0.gguf" .cuda-carry/shared/models/quant/
cp "$s/models/arch/gpt2.gguf" .cuda-carry/shared/models/arch/
cp "$s/golden/stories260K-greedy.jsonl" .cuda-carry/shared/golden/
cp "$s/vocab/ggml-vocab-llama-spm.gguf" .cuda-carry/shared/vocab/
du -sh .cuda-carry .cuda-carry/*
