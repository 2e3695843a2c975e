#!/usr/bin/env bash
# Installs the Python clients the API tests drive (tests/clients/requirements.txt: openai, openai-agents, anthropic,
# every package pinned) into an ignored virtual environment, .cache/python-clients. Instant when it is there and
# was made from the same requirements file. Called by scripts/test.sh. Needs python3-venv and pip's index.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=".cache/python-clients"
req="tests/clients/requirements.txt"
stamp="$venv/requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "install-python-clients: $venv is up to date"
  exit 0
fi
fail() { echo "install-python-clients: $1" >&2; rm -rf "$venv"; exit 1; }
rm -rf "$venv"
mkdir -p .cache
python3 -m venv "$venv" 2>/dev/null || fail "python3 -m venv failed; install python3-venv (Debian) and run scripts/install-python-clients.sh again"
echo "install-python-clients: pip install -r $req into $venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --no-cache-dir -q -r "$req" >"$venv/pip.log" 2>&1 ||
  fail "pip could not install $req ($(grep -m1 ERROR "$venv/pip.log" | cut -c1-120)); check pip's index (PIP_INDEX_URL) and run scripts/install-python-clients.sh again"
echo "$want" >"$stamp"
