# tap.sh: sourced by the shell tests that speak TAP: check NAME EXIT-CODE
# [diagnostics...] prints "ok N - NAME", or "not ok" with the diagnostics
# as comments and counts the failure in $failed.
n=0
failed=0
check() {
  local name=$1 rc=$2; shift 2
  n=$((n + 1))
  if [ "$rc" -eq 0 ]; then echo "ok $n - $name"; else
    failed=$((failed + 1)); echo "not ok $n - $name"; for l in "$@"; do echo "# $l"; done
  fi
}
