"""llama_server.py: llama.cpp's OpenAI-compatible HTTP server, started from
the prebuilt `xllamacpp` module with llama-server's usual flags.

xllamacpp links llama.cpp's own server (tools/server/server.cpp: the same
/v1/chat/completions with SSE, /health, /props, /slots, /metrics) into one
Python extension and ships no `llama-server` executable; this launcher is
that executable's command line for the flags specgen and its tests use.
scripts/llama-server.sh installs the pinned wheel and runs this file with
the venv's interpreter:

    scripts/llama-server.sh serve -m MODEL.gguf --port 8080 -t 1 -np 2

The server runs until SIGINT or SIGTERM. A flag it does not know is an
error (exit 2), never ignored.
"""
import argparse
import signal
import sys
import threading


def parse(argv):
    p = argparse.ArgumentParser(
        prog="llama-server.sh serve",
        description="llama.cpp's server (xllamacpp) with llama-server's flags")
    p.add_argument("-m", "--model", required=True, help="GGUF file")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("-c", "--ctx-size", type=int, default=4096,
                   help="context per server (split among the slots)")
    p.add_argument("-np", "--parallel", type=int, default=2,
                   help="slots: generations served at once")
    p.add_argument("-t", "--threads", type=int, default=1,
                   help="decode threads (1: two threads fight on a busy 2-core machine)")
    p.add_argument("-tb", "--threads-batch", type=int, default=None,
                   help="prompt threads (default: --threads)")
    p.add_argument("-a", "--alias", default=None,
                   help="the model name the server answers to")
    p.add_argument("-n", "--n-predict", type=int, default=-1,
                   help="default tokens per answer (-1: until the end)")
    p.add_argument("--metrics", action="store_true", help="serve /metrics")
    p.add_argument("--slots", dest="slots", action="store_true", default=True,
                   help="serve /slots (default)")
    p.add_argument("--no-slots", dest="slots", action="store_false")
    p.add_argument("--no-webui", action="store_true", help="(always: no web UI)")
    p.add_argument("--jinja", dest="jinja", action="store_true", default=True,
                   help="the model's own chat template (default)")
    p.add_argument("--no-jinja", dest="jinja", action="store_false")
    p.add_argument("--reasoning-format", default="deepseek",
                   choices=["none", "auto", "deepseek", "deepseek-legacy"],
                   help="where <think> text goes (deepseek: reasoning_content)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("-v", "--verbose", action="store_true")
    return p.parse_args(argv)


def main(argv):
    a = parse(argv)
    try:
        import xllamacpp as x
    except ImportError as e:
        sys.exit(f"llama_server.py: xllamacpp is not importable ({e}); "
                 "scripts/llama-server.sh install installs it")
    p = x.CommonParams()
    p.model.path = a.model
    p.hostnames = [a.host]
    p.port = a.port
    p.n_ctx = a.ctx_size
    p.n_parallel = a.parallel
    p.cpuparams.n_threads = a.threads
    p.cpuparams_batch.n_threads = a.threads_batch or a.threads
    p.n_predict = a.n_predict
    p.endpoint_metrics = a.metrics
    p.endpoint_slots = a.slots
    p.endpoint_props = True
    p.ui = False
    p.use_jinja = a.jinja
    rf = x.common_reasoning_format
    p.reasoning_format = {
        "none": rf.COMMON_REASONING_FORMAT_NONE,
        "auto": rf.COMMON_REASONING_FORMAT_AUTO,
        "deepseek": rf.COMMON_REASONING_FORMAT_DEEPSEEK,
        "deepseek-legacy": rf.COMMON_REASONING_FORMAT_DEEPSEEK_LEGACY,
    }[a.reasoning_format]
    if a.alias:
        p.model_alias = {a.alias}
    if a.seed is not None:
        p.sampling.seed = a.seed
    if not a.verbose:
        p.verbosity = 0
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    # Server() loads the model and returns once it listens; the HTTP threads
    # live as long as the object does.
    try:
        server = x.Server(p)
    except Exception as e:  # the model file, the port: say which
        sys.exit(f"llama_server.py: the server did not start: {e}")
    print(f"llama_server.py: listening on {server.listening_address} "
          f"(model {a.model}, {a.parallel} slots, {a.threads} thread(s))",
          file=sys.stderr, flush=True)
    while not done.wait(1.0):
        pass
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
