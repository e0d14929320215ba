#!/usr/bin/env bash
# run_failures.sh SPECGEN: a model that fails says so (issue: a run against a
# server that refused every request printed only "ended (fallback)" and
# exited 0). Three real failures over loopback, each through `specgen run`'s
# human output:
#   refused   a closed port: connection refused
#   http400   a server that answers every request with HTTP 400 and an
#             empty body (what llama-cpp-python does with a non-UUID id)
#   http500   the built-in server failing every attempt with HTTP 500, so
#             the retries give up
# Each: exit 1 with "no generation succeeded" and the cause; the cause
# printed once however many generations hit it; the summary counts the
# failures; iterations say "no kernel", never "fallback". Speaks TAP.
set -uo pipefail
SPECGEN=$1
. "$(dirname "$0")/../tap.sh"
work=$(mktemp -d)
srv=""
cleanup() {
  if [ -n "$srv" ]; then kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A port that was free a moment ago and has no listener now.
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# A server that refuses every request with an empty 400; it prints its port.
python3 -u - >"$work/port" 2>/dev/null <<'PY' &
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self): self.do_POST()
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        self.send_response(400)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1])
s.serve_forever()
PY
srv=$!
for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.1; done
p400=$(head -1 "$work/port")

echo "1..15"
common=(--task hinge_loss --devices cpu:0 --iterations 2 --runs 3 --warmups 1 --tick 0.05)
for kind in refused http400 http500; do
  case $kind in
    refused) args=(--llm "http://127.0.0.1:$closed" --model m); cause="connection failed";;
    http400) args=(--llm "http://127.0.0.1:$p400" --model m); cause="HTTP 400";;
    http500) args=(--server-fault status500:99 --server-speed 3000); cause="HTTP 500";;
  esac
  timeout 300 "$SPECGEN" run "${common[@]}" "${args[@]}" --out "$work/$kind" \
    >"$work/$kind.out" 2>"$work/$kind.err"
  rc=$?
  err=$(cat "$work/$kind.err")
  [ $rc -eq 1 ] && grep -q "^specgen run: no generation succeeded (2 failed): $cause" "$work/$kind.err"
  check "$kind: exit 1, the cause in the last word" $? "exit $rc" "$(tail -5 "$work/$kind.err")"
  warned=$(grep -c "generation failed: $cause" "$work/$kind.err")
  [ "$warned" -eq 1 ]
  check "$kind: the cause printed once for two failed generations" $? "$warned times" "$err"
  grep -q "generations: 0 completed, 2 failed" "$work/$kind.out" &&
    grep -q "2 x $cause" "$work/$kind.out"
  check "$kind: the summary counts the failures by cause" $? "$(cat "$work/$kind.out")"
  [ "$(grep -c 'ended (no kernel)' "$work/$kind.err")" -eq 2 ] &&
    ! grep -q fallback "$work/$kind.err" "$work/$kind.out"
  check "$kind: iterations end with no kernel, never fallback" $? "$err"
  # the tokens line does not pass zeros off as measured counts of something
  grep -q "0 completion$" "$work/$kind.out" && ! grep -q "estimated" "$work/$kind.out"
  check "$kind: nothing read, nothing estimated" $? "$(grep tokens "$work/$kind.out")"
done
exit $((failed > 0))
