#!/usr/bin/env bash
# run_failures.sh SPECGEN: a model server that fails costs no iterations
# (issue 31: each iteration ended "no kernel" after a few seconds, the run
# "finished" and could not be resumed). Real failures over loopback, through
# `specgen run`'s human output:
#   before the run: a closed port (connection refused), a server answering
#     every request with HTTP 400, one with HTTP 500, one with a body that
#     is not an event stream: exit 2, the cause, no run directory
#   during the run: the built-in server failing every attempt with HTTP 500,
#     and a server that answered the start's check and then fails: the
#     iteration waits and sends its main generation again, and after
#     --llm-outage seconds the run stops with exit 1, saying why and how to
#     resume, with no iteration counted; resumed with the server well, it
#     finishes its budget.
# Speaks TAP.
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
# A server that answers as $work/mode says: 400, 500, garbage (200 with a
# plain-text body), ok (a short streamed answer with no kernel in it), or
# ok-once (ok, then 500 from the next request on). It prints its port.
echo ok >"$work/mode"
MODE="$work/mode" python3 -u - >"$work/port" 2>/dev/null <<'PY' &
import http.server, json, os
mode_file = os.environ["MODE"]
def chunk(delta, finish):
    return "data: " + json.dumps({"id": "x", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        mode = open(mode_file).read().strip()
        if mode == "ok-once":
            open(mode_file, "w").write("500\n")
            mode = "ok"
        if mode in ("400", "500"):
            body = b'{"error": {"message": "refused by the test", "type": "x"}}'
            self.send_response(int(mode))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif mode == "garbage":
            body = b"<html>this is not an event stream</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            body = (chunk({"role": "assistant", "content": "No kernel from this model."}, None)
                    + chunk({}, "stop") + "data: [DONE]\n\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1])
s.serve_forever()
PY
srv=$!
for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(head -1 "$work/port")
url="http://127.0.0.1:$port"

# ended_iterations DIR [WHERE]: iterations ended (and not "interrupted")
ended_iterations() {
  python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1] + "/run.db")
print(db.execute("SELECT count(*) FROM iterations WHERE ended_us IS NOT NULL "
                 "AND end_reason != ?", ("interrupted",)).fetchone()[0])' "$1"
}
main_failures() {
  python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1] + "/run.db")
print(db.execute("SELECT count(*) FROM generations WHERE kind = ? AND outcome = ?",
                 ("main", "failed")).fetchone()[0])' "$1"
}

echo "1..13"
common=(--task hinge_loss --devices cpu:0 --iterations 2 --runs 3 --warmups 1 --tick 0.05)

# Before the run: refused with exit 2, nothing started.
for kind in refused http400 http500 garbage; do
  case $kind in
    refused) u="http://127.0.0.1:$closed"; cause="connection failed";;
    http400) u=$url; echo 400 >"$work/mode"; cause="HTTP 400";;
    http500) u=$url; echo 500 >"$work/mode"; cause="HTTP 500";;
    garbage) u=$url; echo garbage >"$work/mode"; cause="stream ended before the generation finished";;
  esac
  timeout 120 "$SPECGEN" run "${common[@]}" --llm "$u" --model m --out "$work/$kind" \
    >"$work/$kind.out" 2>"$work/$kind.err"
  rc=$?
  [ $rc -eq 2 ] && grep -q "does not answer a short chat request.*$cause" "$work/$kind.err" &&
    grep -q "nothing was started" "$work/$kind.err"
  check "$kind: refused before the run with exit 2 and the cause" $? "exit $rc" \
    "$(cat "$work/$kind.err")"
  [ ! -e "$work/$kind" ]
  check "$kind: no run directory" $? "$(ls -la "$work/$kind" 2>&1)"
done

# During the run: the built-in server fails every attempt with HTTP 500.
d=$work/mid500
timeout 300 "$SPECGEN" run "${common[@]}" --server-fault status500 --server-speed 3000 \
  --llm-outage 3 --out "$d" >"$d.out" 2>"$d.err"
rc=$?
[ $rc -eq 1 ] && grep -q "failed every request for .* HTTP 500" "$d.err" &&
  grep -q -- "--resume $d" "$d.err"
check "mid-run 500: exit 1 after --llm-outage, saying why and how to resume" $? "exit $rc" \
  "$(tail -5 "$d.err")"
it=$(ended_iterations "$d"); mf=$(main_failures "$d")
[ "$it" -eq 0 ] && [ "$mf" -ge 2 ] &&
  [ "$(grep -c "waits and sends it again" "$d.err")" -eq 1 ]
check "mid-run 500: no iteration counted, the main sent again, the wait said once" $? \
  "$it iterations ended, $mf mains failed" "$(cat "$d.err")"
timeout 300 "$SPECGEN" run --resume "$d" --server-fault none >"$d.out2" 2>"$d.err2"
rc=$?
it=$(ended_iterations "$d")
[ $rc -eq 0 ] && [ "$it" -eq 2 ]
check "mid-run 500: resumed with the server well, the whole budget" $? \
  "exit $rc, $it iterations ended" "$(tail -5 "$d.err2")"

# During the run: an endpoint that answered the check, then fails.
d=$work/dies
echo ok-once >"$work/mode"
timeout 300 "$SPECGEN" run "${common[@]}" --llm "$url" --model m --llm-outage 3 --out "$d" \
  >"$d.out" 2>"$d.err"
rc=$?
it=$(ended_iterations "$d")
[ $rc -eq 1 ] && grep -q "failed every request" "$d.err" && [ "$it" -eq 0 ]
check "endpoint dies after the check: exit 1, no iteration counted" $? \
  "exit $rc, $it iterations ended" "$(cat "$d.err")"
echo ok >"$work/mode"
timeout 300 "$SPECGEN" run --resume "$d" >"$d.out2" 2>"$d.err2"
rc=$?
it=$(ended_iterations "$d")
[ $rc -eq 0 ] && [ "$it" -eq 2 ]
check "endpoint dies after the check: resumed once it answers, the whole budget" $? \
  "exit $rc, $it iterations ended" "$(tail -5 "$d.err2")"
exit $((failed > 0))
