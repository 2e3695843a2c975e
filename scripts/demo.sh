#!/usr/bin/env bash
# The main job: install what is missing, build Release, and generate a story with the tiny real model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_BUILD_TESTS=OFF >/dev/null
cmake --build build
./build/pagoda run ../shared/models/stories260K.gguf -p "Once upon a time" -n 200 --temp 0.8 --seed 42
