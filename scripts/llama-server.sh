#!/usr/bin/env bash
# llama-server.sh: llama.cpp's OpenAI-compatible server, prebuilt, from PyPI.
#
#   llama-server.sh install          install the pinned xllamacpp wheel into
#                                    a cached venv (skipped when there)
#   llama-server.sh serve FLAGS...   start the server with llama-server's
#                                    flags (installs first if needed); runs
#                                    until SIGINT or SIGTERM
#   llama-server.sh python           print the venv's interpreter
#
# xllamacpp is llama.cpp's own server (server.cpp: /v1/chat/completions with
# SSE, /health, /props, /slots, /metrics) linked into one Python extension,
# a wheel of about 34 MB with no dependencies, built for x86-64 with AVX2
# and FMA: installing it takes seconds where building llama.cpp from source
# took over an hour on a busy 2-core machine. It has no `llama-server`
# executable, so scripts/llama_server.py is its command line:
#
#   scripts/llama-server.sh serve -m "$(scripts/local-model.sh qwen-coder)" \
#       --port 8080 -t 1 -np 2 -c 8192 --alias qwen-coder
#
# Flags of serve: -m/--model, --host, --port, -c/--ctx-size, -np/--parallel,
# -t/--threads, -tb/--threads-batch, -a/--alias, -n/--n-predict, --metrics,
# --slots/--no-slots, --no-webui, --jinja/--no-jinja, --reasoning-format,
# --seed, -v (`serve --help` lists them).
#
# Cache: ${SPECGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specgen}/xllamacpp-VERSION
# (a `done` stamp once installed; a second install only checks it).
set -euo pipefail

VERSION=2026.10.11549
# Its own folder, without dirname: a stamped install runs no tool at all.
here=.; [[ $0 == */* ]] && here=${0%/*}
cache="${SPECGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specgen}"
dir="$cache/xllamacpp-$VERSION"
venv="$dir/venv"

die() { echo "llama-server.sh: $*" >&2; exit 1; }

cmd_install() {
  [ -f "$dir/done" ] && return 0
  mkdir -p "$dir"
  local t0; t0=$(date +%s)
  rm -rf "$venv"
  python3 -m venv "$venv" || die "python3 -m venv failed (python3-venv missing? scripts/setup.sh installs it)"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "xllamacpp==$VERSION" \
    >"$dir/pip.log" 2>&1 \
    || { tail -20 "$dir/pip.log" >&2; die "cannot install xllamacpp $VERSION from PyPI ($dir/pip.log)"; }
  "$venv/bin/python" -c 'import xllamacpp' 2>"$dir/import.log" \
    || { cat "$dir/import.log" >&2; die "xllamacpp $VERSION does not load here (it needs x86-64 with AVX2 and FMA)"; }
  echo "$(( $(date +%s) - t0 ))" >"$dir/done"
  echo "llama-server.sh: installed xllamacpp $VERSION in $(cat "$dir/done") s" >&2
}

case "${1:-}" in
  install) cmd_install;;
  serve)
    shift
    cmd_install
    exec "$venv/bin/python" "$here/llama_server.py" "$@";;
  python)
    [ -f "$dir/done" ] || die "not installed (run: $0 install)"
    echo "$venv/bin/python";;
  *) sed -n '2,26p' "$0" >&2; exit 2;;
esac
