#!/usr/bin/env bash
# Installs everything xpusim needs from Debian 12 packages (run as root, or with sudo available).
#   scripts/install-deps.sh                the build, the simulator, sweeps over MPI, the pages (matplotlib)
#   scripts/install-deps.sh --test-extras  also what some tests use when present: Chromium to
#                                          render the HTML reports, pandas for the sweep example
#   scripts/install-deps.sh --fuzz         also clang and its libFuzzer runtime (scripts/fuzz.sh)
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libsystemc-dev libyaml-cpp-dev libboost-program-options-dev
          libspdlog-dev nlohmann-json3-dev libprotobuf-dev protobuf-compiler catch2 python3 python3-yaml python3-jsonschema python3-pytest python3-dev python3-matplotlib pybind11-dev libopenmpi-dev openmpi-bin)
for arg in "$@"; do
  case "$arg" in
    --test-extras) packages+=(chromium python3-pandas) ;;
    --fuzz) packages+=(clang libclang-rt-14-dev llvm) ;;
    *) echo "install-deps.sh: unknown argument '$arg' (--test-extras, --fuzz)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
