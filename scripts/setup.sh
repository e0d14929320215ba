#!/usr/bin/env bash
# setup.sh: installs the Debian 12 packages that specgen's build and tests need.
# Does nothing when they are all there already. Run as root (or with sudo).
set -euo pipefail

packages=(
  gcc libc6-dev pkg-config meson ninja-build   # the build
  libuv1-dev libcurl4-openssl-dev libjansson-dev libmicrohttpd-dev
  libsqlite3-dev libyaml-dev                   # the libraries specgen links
  sqlite3                                      # tests read run stores with its shell
  clang libclang-rt-14-dev                     # fuzz targets and sanitizer runs
  python3                                      # test server clients, examples
  iproute2 procps                              # sandbox and process tests
  libseccomp-dev                               # the sandbox's seccomp filters
  libjs-chart.js                               # charts inlined into `specgen report` pages
  chromium                                     # headless browser for the report's tests
  python3-pip python3-venv curl                # llama.cpp's server from PyPI (scripts/llama-server.sh)
  libhiredis-dev redis-server                  # remote workers through Redis (docs/remote.md)
  zlib1g-dev                                   # the record of model sessions (docs/llm.md)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt-get (a second setup running at the same time) rather
# than failing on its lock.
lock=(-o DPkg::Lock::Timeout=900)
$sudo apt-get "${lock[@]}" update -qq
$sudo apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
