#!/usr/bin/env bash
#===- scripts/setup.sh - Install dependencies and configure the build -----===#
#
# Idempotent: installs the Debian packages ga-opt needs (only those missing;
# `apt-get update` first, as root or through sudo), then configures the CMake
# build in $GA_BUILD_DIR (default: build/) if it is not configured yet.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/build_dir.sh"
LLVM_DIR=/usr/lib/llvm-22

# Everything the build and the tests use, from Debian 12's archive
# (fortunes: the text corpus of scripts/make_corpus.py and ga-train's tests).
PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libgtest-dev ninja-build ccache cmake g++ python3 python3-numpy
  libopenmpi-dev openmpi-bin valgrind clang-format-22 libomp-22-dev
  coinor-libcbc-dev python3-venv
  fortunes
)
# GA_BENCH=1: also PyTorch on OpenBLAS, the baseline of
# scripts/bench_models.py, and matplotlib for the plot of
# scripts/bench_remat.py (never needed by the build or the tests).
if [[ -n "${GA_BENCH:-}" ]]; then
  PACKAGES+=(python3-torch libopenblas0-pthread python3-matplotlib)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $EUID -eq 0 ]]; then
    SUDO=()
  elif command -v sudo >/dev/null; then
    SUDO=(sudo)
  else
    echo "setup: error: missing packages (${missing[*]}) and not root;" \
         "run as root or install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -q
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

# The PyTorch front end (ga-import): a virtual environment outside the
# checkout, made once per machine (GA_NO_FRONTEND=1 skips it).
"$ROOT/scripts/setup_frontend.sh" >/dev/null

# cudnn-frontend's headers (the CUDA runtime's fused attention), from the
# front end's environment (nvidia-cudnn-frontend, an extra of
# setup_frontend.sh); empty where there is none.
CUDNN_FRONTEND_INCLUDE=""
if FRONTEND_PYTHON="$("$ROOT/scripts/setup_frontend.sh" --locate)" &&
   [[ -n "$FRONTEND_PYTHON" ]]; then
  SITE="$("$FRONTEND_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  [[ -f "$SITE/include/cudnn_frontend.h" ]] && CUDNN_FRONTEND_INCLUDE="$SITE/include"
fi

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  echo "setup: configuring $BUILD_DIR"
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
    -DGA_CUDNN_FRONTEND_INCLUDE="$CUDNN_FRONTEND_INCLUDE" \
    -DCMAKE_BUILD_TYPE="${GA_BUILD_TYPE:-Release}" \
    -DMLIR_DIR="$LLVM_DIR/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_DIR/bin/lit" \
    -DGA_SANITIZE="${GA_SANITIZE:-}"
else
  echo "setup: $BUILD_DIR already configured"
fi
