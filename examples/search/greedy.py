#!/usr/bin/env python3
"""greedy.py: an example search for `specgen run --search exec:CMD`.

Usage:
    specgen run --search "exec:python3 examples/search/greedy.py" ...

The protocol is in docs/search.md. In short, specgen writes one JSON object
per line to our stdin and reads one per line from our stdout:

    specgen -> us   {"type":"hello","protocol":1,"seed":...}
    us -> specgen   {"type":"hello","protocol":1}
    specgen -> us   {"type":"next","iteration":i,"kernels":[...],"best_id":...}
    us -> specgen   {"type":"plan","prompts":[{...}, ...]}
    ...
    specgen -> us   {"type":"bye"}

stdout is only for the protocol: log to stderr (specgen passes it through).

The strategy (greedy hill climbing, like the built-in `refine`):
  * keep the best profiled kernel we have seen;
  * each iteration, ask for one refinement of it, showing its source, its
    profile and the most recent failures (so the model does not repeat them);
  * on iteration 0, and whenever 5 iterations in a row brought nothing better,
    ask for a kernel from scratch instead, to escape a dead end.
Only the standard library is used, so it can be copied and changed freely.
"""
import json
import sys

PROTOCOL = 1
RECENT_FAILURES = 3     # how many recent failures a prompt shows
RESTART_AFTER = 5       # iterations without improvement before a restart


def log(*args):
    # stderr is free for logs; never print() to stdout outside send().
    print("greedy:", *args, file=sys.stderr, flush=True)


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()  # specgen waits for the whole line


def is_failure(k):
    """A kernel that failed for a reason the model should hear about."""
    if k["dropped"]:
        return False    # withdrawn at an iteration boundary: not its fault
    if k["extract"] != "found":
        return True     # no code came out of the reply
    # aborted and infra_error are specgen's problems, not the kernel's
    return k["validated"] and k["validate_status"] not in (
        "ok", "aborted", "infra_error")


class Greedy:
    def __init__(self):
        self.kernels = {}     # id -> kernel, everything seen so far
        self.failures = []    # ids of failed kernels, oldest first
        self.best = None      # the best profiled kernel, or None
        self.stalled = 0      # iterations since best last improved

    def learn(self, kernels):
        """Takes in the kernels of the iterations we have not seen yet."""
        improved = False
        for k in kernels:
            self.kernels[k["id"]] = k
            if is_failure(k):
                self.failures.append(k["id"])
            if k["profiled"] and k["speedup"] is not None and not k["dropped"]:
                if self.best is None or k["speedup"] > self.best["speedup"]:
                    self.best = k
                    improved = True
        if kernels:  # iteration 0 has nothing to judge yet
            self.stalled = 0 if improved else self.stalled + 1

    def plan(self, iteration):
        recent = [{"kind": "failure", "kernel": i}
                  for i in reversed(self.failures[-RECENT_FAILURES:])]
        if self.best is None or (self.stalled > 0 and
                                 self.stalled % RESTART_AFTER == 0):
            # From scratch: base_kernel 0. Showing recent failures still
            # helps the model avoid them.
            log("iteration %d: from scratch (stalled %d)" %
                (iteration, self.stalled))
            return {"base_kernel": 0, "items": recent}
        b = self.best["id"]
        items = [{"kind": "kernel", "kernel": b}]
        if self.best["profile_text"] is not None:
            items.append({"kind": "profile", "kernel": b})
        log("iteration %d: refine kernel %d (speedup %.3f)" %
            (iteration, b, self.best["speedup"]))
        return {"base_kernel": b, "items": items + recent}


def main():
    search = Greedy()
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            if msg.get("protocol") != PROTOCOL:
                send({"type": "error",
                      "message": "greedy.py speaks protocol %d" % PROTOCOL})
                return 1
            send({"type": "hello", "protocol": PROTOCOL})
        elif kind == "next":
            search.learn(msg["kernels"])
            send({"type": "plan",
                  "prompts": [search.plan(msg["iteration"])]})
        elif kind == "bye":
            return 0
        else:
            log("ignoring a message of type %r" % kind)
    return 0  # stdin closed: specgen is gone


if __name__ == "__main__":
    sys.exit(main())
