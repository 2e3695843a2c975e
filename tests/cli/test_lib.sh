# Shared by the CLI test scripts: counters, ok/bad, and expect_error. Source it after setting `pagoda` and `tmp`.
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect_error NAME PATTERN -- ARGS...: exit code 1..125 (not a signal), exactly one stderr line matching PATTERN.
expect_error() {
  local name="$1" pattern="$2"
  shift 3
  timeout 60 "$pagoda" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local lines
  lines=$(wc -l <"$tmp/err")
  if [ $rc -eq 0 ] || [ $rc -ge 124 ]; then
    bad "$name: exit code $rc"; cat "$tmp/err"; return
  fi
  if [ "$lines" -ne 1 ]; then bad "$name: $lines stderr lines"; cat "$tmp/err"; return; fi
  if ! grep -qE -- "$pattern" "$tmp/err"; then bad "$name: stderr '$(cat "$tmp/err")' lacks /$pattern/"; return; fi
  ok
}

# The closing line ctest's log and CI read; the exit status says whether anything failed.
finish_tests() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
