#!/usr/bin/env bash
# `pagoda anchor`: the operator's flow on a real model (keygen, root, sign, verify, inspect, revoke, root rotation),
# each refusal as one `pagoda: error: <code>: ...` line and a non-zero exit, and a cross-check against an
# independent Ed25519 and CBOR implementation (PyNaCl and cbor2) in both directions when Python has them.
set -u
pagoda="$1"
shared="$2"
model="$shared/models/stories260K.gguf"
other_model="$shared/models/arch/llama.gguf"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/test_lib.sh"

# A Python for the byte-level checks, and one with PyNaCl and cbor2 for the independent implementation (the
# Debian packages python3-nacl and python3-cbor2 live in /usr/bin/python3, which need not be first on PATH).
py=""
for c in python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import base64, hashlib, json' 2>/dev/null; then py="$c"; break; fi
done
pynacl=""
for c in python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import nacl.signing, cbor2' 2>/dev/null; then pynacl="$c"; break; fi
done
# Without them the checks are skipped where a developer runs this by hand, but never where they must run:
# scripts/test.sh (and so CI) sets PAGODA_REQUIRE_REFERENCES=1, and a missing reference is then a failure.
missing_reference() {
  if [ "${PAGODA_REQUIRE_REFERENCES:-0}" = 1 ]; then bad "$1 (PAGODA_REQUIRE_REFERENCES=1)"; else echo "SKIP: $1"; fi
}
[ -n "$py" ] || missing_reference "no python3: the payload-digest checks are skipped"
[ -n "$pynacl" ] ||
  missing_reference "python3 lacks nacl (python3-nacl) or cbor2 (python3-cbor2): the cross-checks are skipped"

a() { timeout 60 "$pagoda" anchor "$@"; }
k="$tmp/k"
mkdir "$k"

# --- keygen
for name in root signer revoker; do
  id=$(a keygen -o "$k/$name" 2>"$tmp/err")
  rc=$?
  if [ $rc -ne 0 ] || ! echo "$id" | grep -qxE '[0-9a-f]{64}'; then bad "keygen $name: rc $rc, '$id' $(cat "$tmp/err")"; fi
  eval "${name}_id=\$id"
done
ok
[ "$(stat -c %a "$k/signer.key")" = 600 ] && ok || bad "secret key mode $(stat -c %a "$k/signer.key")"
grep -qxE '[0-9a-f]{64}' "$k/signer.key" && [ "$(wc -l <"$k/signer.key")" -eq 1 ] && ok || bad "secret key format"
grep -qxE '[0-9a-f]{64}' "$k/signer.pub" && [ "$(wc -l <"$k/signer.pub")" -eq 1 ] && ok || bad "public key format"
if [ -n "$py" ]; then
  want=$("$py" -c 'import hashlib,sys; print(hashlib.sha256(bytes.fromhex(open(sys.argv[1]).read().strip())).hexdigest())' "$k/signer.pub")
  [ "$want" = "$signer_id" ] && ok || bad "keyid $signer_id is not SHA-256 of the public key ($want)"
fi
cp "$k/signer.key" "$tmp/signer.key.before"
expect_error "keygen refuses to overwrite" "signer.key' exists; refusing to overwrite it" -- anchor keygen -o "$k/signer"
cmp -s "$k/signer.key" "$tmp/signer.key.before" && ok || bad "keygen changed an existing key"

# --- root
roles=(--role "root=$k/root.pub" --role "anchor=$k/signer.pub" --role "revocation=$k/revoker.pub")
a root "${roles[@]}" --version 1 --expires +30d -o "$tmp/root.json" 2>"$tmp/err" && ok || bad "root: $(cat "$tmp/err")"
grep -q "\"$signer_id\"" "$tmp/root.json" && grep -q '"threshold": 1' "$tmp/root.json" && ok || bad "root.json: $(cat "$tmp/root.json")"
expect_error "threshold above the key count" "--threshold root=3 is more than the role's 2 keys" -- anchor root \
  --role "root=$k/root.pub,$k/revoker.pub" --role "anchor=$k/signer.pub" --role "revocation=$k/revoker.pub" \
  --threshold root=3 --version 1 --expires +30d -o "$tmp/r.json"
expect_error "unknown role" "unknown role 'admin'" -- anchor root "${roles[@]}" --role "admin=$k/root.pub" \
  --version 1 --expires +30d -o "$tmp/r.json"
expect_error "missing role" "--role revocation=PUBFILE is required" -- anchor root --role "root=$k/root.pub" \
  --role "anchor=$k/signer.pub" --version 1 --expires +30d -o "$tmp/r.json"
expect_error "secret key as a role key" "is a secret key" -- anchor root --role "root=$k/root.key" \
  --role "anchor=$k/signer.pub" --role "revocation=$k/revoker.pub" --version 1 --expires +30d -o "$tmp/r.json"
expect_error "missing public key file" "cannot open '$tmp/none.pub'" -- anchor root --role "root=$k/root.pub" \
  --role "anchor=$k/signer.pub" --role "revocation=$tmp/none.pub" --version 1 --expires +30d -o "$tmp/r.json"
echo "not hex" >"$tmp/bad.pub"
expect_error "bad hex" "not 64 hex digits" -- anchor root --role "root=$tmp/bad.pub" --role "anchor=$k/signer.pub" \
  --role "revocation=$k/revoker.pub" --version 1 --expires +30d -o "$tmp/r.json"
expect_error "invalid date" "--expires '2027-02-30' is not a date" -- anchor root "${roles[@]}" --version 1 \
  --expires 2027-02-30 -o "$tmp/r.json"
expect_error "expired root" "trust root: expired" -- anchor root "${roles[@]}" --version 1 --expires 2020-01-31 -o "$tmp/r.json"
[ -e "$tmp/r.json" ] && bad "a refused root was written" || ok

# --- sign and verify
text="Lily is a little girl who loves her dog Max."
sign_args=(--model "$model" --lineage lily --kind persona --scope '*' --text "$text")
digest=$(a sign --key "$k/signer.key" "${sign_args[@]}" --version 1 --expires +7d -o "$tmp/anchor.json" 2>"$tmp/err" | tail -n 1)
echo "$digest" | grep -qxE '[0-9a-f]{64}' && ok || bad "sign: '$digest' $(cat "$tmp/err")"
out=$(a verify --trust-root "$tmp/root.json" --model "$model" "$tmp/anchor.json" 2>"$tmp/err")
rc=$?
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && ok || bad "verify: rc $rc $(cat "$tmp/err")"
[ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -qF "{\"digest\":\"$digest\",\"lineage\":\"lily\",\"version\":1,\"kind\":\"persona\",\"scope\":\"*\",\"text_bytes\":${#text},\"issued\":" &&
  echo "$out" | grep -qF "\"signers\":[\"$signer_id\"]}" && ok || bad "verify output: $out"
if [ -n "$py" ]; then
  sha=$("$py" -c 'import base64,hashlib,json,sys; print(hashlib.sha256(base64.b64decode(json.load(open(sys.argv[1]))["payload"])).hexdigest())' "$tmp/anchor.json")
  [ "$sha" = "$digest" ] && ok || bad "digest $digest is not SHA-256 of the payload ($sha)"
fi
a inspect "$tmp/anchor.json" >"$tmp/inspect" 2>&1 && grep -qF '"verified": false' "$tmp/inspect" &&
  grep -qF "\"digest\": \"$digest\"" "$tmp/inspect" && grep -qF '"payloadType": "application/vnd.pagoda.anchor.v1+cbor"' "$tmp/inspect" &&
  grep -qF "\"text\": \"$text\"" "$tmp/inspect" && grep -qF "\"$signer_id\"" "$tmp/inspect" && ok || bad "inspect: $(cat "$tmp/inspect")"
printf '%s' "$text" >"$tmp/text.txt"
d2=$(a sign --key "$k/signer.key" --model "$model" --lineage lily --kind persona --scope '*' --text-file "$tmp/text.txt" \
  --version 2 --expires +7d -o "$tmp/anchor2.json" 2>&1 | tail -n 1)
a verify --trust-root "$tmp/root.json" --model "$model" "$tmp/anchor2.json" 2>&1 | grep -qF "\"digest\":\"$d2\",\"lineage\":\"lily\",\"version\":2" &&
  ok || bad "sign --text-file: $d2"

# --- verify refusals
expect_error "wrong model" "^pagoda: error: wrong_model: " -- anchor verify --trust-root "$tmp/root.json" --model "$other_model" "$tmp/anchor.json"
# One base64 character of the payload changed: the signature no longer covers it.
envelope=$(cat "$tmp/anchor.json")
payload=${envelope#*\"payload\":\"}
payload=${payload%%\"*}
c=${payload:20:1}
[ "$c" = A ] && n=B || n=A
printf '%s\n' "${envelope/$payload/${payload:0:20}$n${payload:21}}" >"$tmp/tampered.json"
cmp -s "$tmp/anchor.json" "$tmp/tampered.json" && bad "tampering changed nothing"
expect_error "tampered payload" "^pagoda: error: bad_signature: " -- anchor verify --trust-root "$tmp/root.json" --model "$model" "$tmp/tampered.json"
a sign --key "$k/revoker.key" "${sign_args[@]}" --version 3 --expires +7d -o "$tmp/by_revoker.json" >/dev/null 2>&1 || bad "sign by revoker"
expect_error "signed by the revocation key" "^pagoda: error: wrong_role: " -- anchor verify --trust-root "$tmp/root.json" --model "$model" "$tmp/by_revoker.json"
a sign --key "$k/signer.key" "${sign_args[@]}" --version 4 --issued 2020-01-01 --expires 2020-01-02T00:00:00Z -o "$tmp/old.json" >/dev/null 2>&1 || bad "sign in the past"
expect_error "expired anchor" "^pagoda: error: expired: " -- anchor verify --trust-root "$tmp/root.json" --model "$model" "$tmp/old.json"
a sign --key "$k/signer.key" "${sign_args[@]}" --version 5 --issued +1d --expires +2d -o "$tmp/future.json" >/dev/null 2>&1 || bad "sign for later"
expect_error "not yet valid" "^pagoda: error: not_yet_valid: " -- anchor verify --trust-root "$tmp/root.json" --model "$model" "$tmp/future.json"
echo "this is not JSON" >"$tmp/garbage.json"
expect_error "not JSON" "^pagoda: error: malformed_envelope: " -- anchor verify --trust-root "$tmp/root.json" --model "$model" "$tmp/garbage.json"
expect_error "inspect not JSON" "^pagoda: error: malformed_envelope: " -- anchor inspect "$tmp/garbage.json"
expect_error "root file as an anchor" "^pagoda: error: malformed_envelope: " -- anchor verify --trust-root "$tmp/root.json" --model "$model" "$tmp/root.json"
expect_error "state dir without a state" "no state.json in" -- anchor verify --trust-root "$tmp/root.json" --model "$model" --state-dir "$tmp" "$tmp/anchor.json"
expect_error "missing anchor" "cannot open '$tmp/none.json'" -- anchor verify --trust-root "$tmp/root.json" --model "$model" "$tmp/none.json"
expect_error "missing model" "cannot open '$tmp/none.gguf'" -- anchor verify --trust-root "$tmp/root.json" --model "$tmp/none.gguf" "$tmp/anchor.json"

# --- sign refusals
expect_error "public key to sign" "is a public key" -- anchor sign --key "$k/signer.pub" "${sign_args[@]}" --version 1 --expires +1d -o "$tmp/x.json"
expect_error "no text" "exactly one of --text and --text-file" -- anchor sign --key "$k/signer.key" --model "$model" \
  --lineage l --kind k --scope s --version 1 --expires +1d -o "$tmp/x.json"
expect_error "bad relative date" "--expires '\+3w' is not a date" -- anchor sign --key "$k/signer.key" "${sign_args[@]}" --version 1 --expires +3w -o "$tmp/x.json"
expect_error "issued after expires" "--issued .* must be before --expires" -- anchor sign --key "$k/signer.key" "${sign_args[@]}" \
  --version 1 --issued +2d --expires +1d -o "$tmp/x.json"
expect_error "kind too long" "--kind must have 1 to 32 bytes" -- anchor sign --key "$k/signer.key" --model "$model" --lineage l \
  --kind "$(printf 'k%.0s' $(seq 33))" --scope s --text t --version 1 --expires +1d -o "$tmp/x.json"
expect_error "model is a folder" "is not a regular file" -- anchor sign --key "$k/signer.key" --model "$tmp" --lineage l \
  --kind k --scope s --text t --version 1 --expires +1d -o "$tmp/x.json"
[ -e "$tmp/x.json" ] && bad "a refused anchor was written" || ok

# --- revoke
a revoke --key "$k/revoker.key" --version 1 --digest "$digest" --lineage lily --keyid "$signer_id" --expires +1d -o "$tmp/rev.json" 2>"$tmp/err" && ok ||
  bad "revoke: $(cat "$tmp/err")"
grep -qF '"payloadType":"application/vnd.pagoda.revocation.v1+cbor"' "$tmp/rev.json" && ok || bad "revocation payloadType: $(cat "$tmp/rev.json")"
a inspect "$tmp/rev.json" >"$tmp/inspect" 2>&1 && grep -qF "\"$digest\"" "$tmp/inspect" && grep -qF '"lily"' "$tmp/inspect" && ok || bad "inspect revocation: $(cat "$tmp/inspect")"
expect_error "revoke bad digest" "--digest 'xyz' is not 64 hex digits" -- anchor revoke --key "$k/revoker.key" --version 1 --digest xyz --expires +1d -o "$tmp/r.json"

# --- root rotation: signed by the previous root's root key and the new one's
a keygen -o "$k/root2" >/dev/null || bad "keygen root2"
rot_roles=(--role "root=$k/root2.pub" --role "anchor=$k/signer.pub" --role "revocation=$k/revoker.pub" --expires +60d --previous "$tmp/root.json")
a root "${rot_roles[@]}" --version 2 --sign-with "$k/root.key" --sign-with "$k/root2.key" -o "$tmp/rotation.json" 2>"$tmp/err" && ok || bad "rotation: $(cat "$tmp/err")"
grep -qF '"payloadType":"application/vnd.pagoda.root.v1+json"' "$tmp/rotation.json" && ok || bad "rotation payloadType"
expect_error "rotation without the new key" "^pagoda: error: unknown_key: .*the new root" -- anchor root "${rot_roles[@]}" --version 2 --sign-with "$k/root.key" -o "$tmp/r.json"
expect_error "rotation skipping a version" "--version 3 must be 2" -- anchor root "${rot_roles[@]}" --version 3 --sign-with "$k/root.key" --sign-with "$k/root2.key" -o "$tmp/r.json"

# --- an independent implementation: PyNaCl verifies what pagoda signed, and pagoda verifies what PyNaCl signed
if [ -n "$pynacl" ]; then
  "$pynacl" - "$tmp/anchor.json" "$tmp/rev.json" "$tmp/rotation.json" "$k" "$model" "$digest" "$text" "$tmp/py_anchor.json" \
    >"$tmp/py.out" 2>&1 <<'EOF'
import base64, cbor2, hashlib, json, sys, time
import nacl.signing
anchor_path, rev_path, rot_path, keys, model, digest, text, out_path = sys.argv[1:9]

def pae(t, p):
    t = t.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(p), p)

def pub(name):
    return bytes.fromhex(open(f"{keys}/{name}.pub").read().strip())

def check_envelope(path, ptype, signer_names):
    env = json.load(open(path))
    assert env["payloadType"] == ptype, env["payloadType"]
    payload = base64.b64decode(env["payload"], validate=True)
    assert len(env["signatures"]) == len(signer_names)
    for sig, name in zip(env["signatures"], signer_names):
        key = pub(name)
        assert sig["keyid"] == hashlib.sha256(key).hexdigest(), sig["keyid"]
        nacl.signing.VerifyKey(key).verify(pae(ptype, payload), base64.b64decode(sig["sig"]))
    return payload

model_digest = hashlib.sha256(open(model, "rb").read()).digest()
payload = check_envelope(anchor_path, "application/vnd.pagoda.anchor.v1+cbor", ["signer"])
assert hashlib.sha256(payload).hexdigest() == digest
p = cbor2.loads(payload)
assert set(p) == {"v", "lineage", "version", "kind", "scope", "model", "text", "issued", "expires"}, p
assert (p["v"], p["lineage"], p["version"], p["kind"], p["scope"], p["text"]) == (1, "lily", 1, "persona", "*", text), p
assert p["model"] == model_digest
assert p["issued"] <= time.time() < p["expires"]
assert cbor2.dumps(p, canonical=True) == payload, "not the deterministic encoding"

r = cbor2.loads(check_envelope(rev_path, "application/vnd.pagoda.revocation.v1+cbor", ["revoker"]))
assert set(r) == {"v", "version", "issued", "expires", "digests", "lineages", "keyids"}, r
assert r["v"] == 1 and r["version"] == 1 and r["issued"] < r["expires"]
assert r["digests"] == [bytes.fromhex(digest)] and r["lineages"] == ["lily"]
assert r["keyids"] == [hashlib.sha256(pub("signer")).hexdigest()]

root = json.loads(check_envelope(rot_path, "application/vnd.pagoda.root.v1+json", ["root", "root2"]))
assert root["version"] == 2 and root["roles"]["root"]["keyids"] == [hashlib.sha256(pub("root2")).hexdigest()]

# An anchor made here, signed with the signer's seed: pagoda must accept it and print its digest.
seed = bytes.fromhex(open(f"{keys}/signer.key").read().strip())
sk = nacl.signing.SigningKey(seed)
assert bytes(sk.verify_key) == pub("signer")
now = int(time.time())
mine = cbor2.dumps({"v": 1, "lineage": "py", "version": 7, "kind": "memory", "scope": "acme", "model": model_digest,
                    "text": "Max is brown.", "issued": now - 60, "expires": now + 3600}, canonical=True)
ptype = "application/vnd.pagoda.anchor.v1+cbor"
sig = sk.sign(pae(ptype, mine)).signature
json.dump({"payloadType": ptype, "payload": base64.b64encode(mine).decode(),
           "signatures": [{"keyid": hashlib.sha256(pub("signer")).hexdigest(), "sig": base64.b64encode(sig).decode()}]},
          open(out_path, "w"))
print(hashlib.sha256(mine).hexdigest())
EOF
  if [ $? -eq 0 ]; then
    ok
    py_digest=$(tail -n 1 "$tmp/py.out")
    out=$(a verify --trust-root "$tmp/root.json" --model "$model" "$tmp/py_anchor.json" 2>&1)
    echo "$out" | grep -qF "{\"digest\":\"$py_digest\",\"lineage\":\"py\",\"version\":7,\"kind\":\"memory\",\"scope\":\"acme\",\"text_bytes\":13," &&
      ok || bad "pagoda verify of a PyNaCl anchor: $out"
  else
    bad "PyNaCl/cbor2 cross-check: $(cat "$tmp/py.out")"
  fi
fi

# --- batch and bench start from an anchor given with --anchor
anchor_ids=$(timeout 60 "$pagoda" tokenize "$model" -p "$text" --no-special --format json | tail -n 1 | sed 's/.*\[\(.*\)\].*/\1/')
printf '{"id": "a", "prompt_ids": [1, 410, 385], "anchor": "%s", "max_tokens": 8, "temperature": 0}\n' "$digest" >"$tmp/in.jsonl"
printf '{"id": "p", "prompt_ids": [1, %s, 410, 385], "max_tokens": 8, "temperature": 0}\n' "$anchor_ids" >>"$tmp/in.jsonl"
printf '{"id": "u", "prompt": "x", "anchor": "%s"}\n' "$(printf 'f%.0s' $(seq 64))" >>"$tmp/in.jsonl"
timeout 120 "$pagoda" batch "$model" --input "$tmp/in.jsonl" --output "$tmp/out.jsonl" --kv-cache-mem 16MiB \
  --anchor-trust-root "$tmp/root.json" --anchor "$tmp/anchor.json" 2>"$tmp/err" && ok || bad "batch --anchor: $(cat "$tmp/err")"
ids_a=$(sed -n 1p "$tmp/out.jsonl" | grep -o '"ids":\[[0-9,]*\]')
ids_p=$(sed -n 2p "$tmp/out.jsonl" | grep -o '"ids":\[[0-9,]*\]')
[ -n "$ids_a" ] && [ "$ids_a" = "$ids_p" ] && ok || bad "batch: anchored $ids_a differs from plain $ids_p"
sed -n 3p "$tmp/out.jsonl" | grep -q 'anchor_not_found' && ok || bad "batch: unknown anchor: $(sed -n 3p "$tmp/out.jsonl")"
bench=$(timeout 120 "$pagoda" bench "$model" --concurrency 2 -p 8 -n 4 -r 1 --kv-cache-mem 16MiB --format json \
  --anchor-trust-root "$tmp/root.json" --anchor "$tmp/anchor.json" 2>"$tmp/err" | tail -n 1)
echo "$bench" | grep -qE '"anchor_tokens":[1-9]' && ok || bad "bench --anchor: $bench $(cat "$tmp/err")"
expect_error "bench --anchor without --concurrency" "needs --concurrency" -- bench "$model" --anchor "$tmp/anchor.json"

finish_tests
