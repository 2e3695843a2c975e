#!/usr/bin/env bash
# Installs the two routers the fleet tests run pagoda replicas behind (scripts/fleet-test.sh), into .cache/fleet
# (ignored): SGLang Model Gateway (`smg`, scripts/fleet/requirements.txt, every package pinned) in a virtual
# environment, and llm-d's KV-cache indexer (Go module github.com/llm-d/llm-d-kv-cache-manager v0.5.0, built with
# the machine's Go into .cache/fleet/bin/llmd-scorer from scripts/fleet/llmd). Each part is instant when it is
# there and up to date. Needs python3-venv, pip's index, Go with its module proxy, and libzmq3-dev (scripts/
# apt-packages.txt). Not part of the README's two commands: the fleet tests are run on demand (docs/scale-out.md).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
fleet=".cache/fleet"
mkdir -p "$fleet/bin"

# --- smg ---
venv="$fleet/venv"
req="scripts/fleet/requirements.txt"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ -x "$venv/bin/smg" ] && [ "$(cat "$venv/requirements.sha256" 2>/dev/null)" = "$want" ]; then
  echo "install-fleet-tools: smg is up to date"
else
  rm -rf "$venv"
  python3 -m venv "$venv" 2>/dev/null || { echo "install-fleet-tools: python3 -m venv failed; install python3-venv" >&2; exit 1; }
  echo "install-fleet-tools: pip install -r $req into $venv"
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-cache-dir -q -r "$req" >"$venv/pip.log" 2>&1; then
    echo "install-fleet-tools: pip could not install $req ($(grep -m1 ERROR "$venv/pip.log" | cut -c1-120)); check pip's index" >&2
    rm -rf "$venv"
    exit 1
  fi
  echo "$want" >"$venv/requirements.sha256"
fi
ln -sfn "$root/$venv/bin/smg" "$fleet/bin/smg"

# --- llm-d's indexer ---
command -v go >/dev/null || { echo "install-fleet-tools: no 'go' on PATH; install Go to build llm-d's indexer" >&2; exit 1; }
src="$fleet/llm-d-kv-cache"  # scripts/fleet/llmd/go.mod replaces github.com/llm-d/llm-d-kv-cache with this folder
if [ ! -f "$src/go.mod" ]; then
  # Published on the proxy under its old name; its go.mod names the module github.com/llm-d/llm-d-kv-cache.
  dir=$(cd "$(mktemp -d)" && go mod download -json github.com/llm-d/llm-d-kv-cache-manager@v0.5.0 |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Dir") or sys.exit(d.get("Error")))') ||
    { echo "install-fleet-tools: go could not download github.com/llm-d/llm-d-kv-cache-manager@v0.5.0; check GOPROXY" >&2; exit 1; }
  rm -rf "$src.tmp" && cp -r "$dir" "$src.tmp" && chmod -R u+w "$src.tmp" && mv "$src.tmp" "$src"
fi
bin="$fleet/bin/llmd-scorer"
if [ -x "$bin" ] && [ -z "$(find scripts/fleet/llmd -newer "$bin" -type f)" ]; then
  echo "install-fleet-tools: llmd-scorer is up to date"
else
  # Leave out pkg/kvcache/indexer.go, the Indexer facade: it alone pulls in the tokenizer pool (cgo, a prebuilt
  # libtokenizers.a) and the chat-template preprocessor (cgo, embedded CPython). Token ids come from pagoda's render
  # endpoint instead; the package's scorer and llm-d's event pool and index build as they are.
  printf 'package kvcache\n' >"$fleet/indexer_stub.go"
  printf '{"Replace":{"%s":"%s"}}\n' "$root/$src/pkg/kvcache/indexer.go" "$root/$fleet/indexer_stub.go" >"$fleet/overlay.json"
  echo "install-fleet-tools: building $bin (first time: a few minutes)"
  (cd scripts/fleet/llmd && go build -overlay "$root/$fleet/overlay.json" -o "$root/$bin" .) ||
    { echo "install-fleet-tools: building llm-d's indexer failed (see above)" >&2; exit 1; }
fi
echo "install-fleet-tools: ready: $fleet/bin/smg, $bin"
