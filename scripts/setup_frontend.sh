#!/usr/bin/env bash
#===- scripts/setup_frontend.sh - The PyTorch front end's environment ------===#
#
# Creates the Python virtual environment of ga-import (torch, torch-mlir,
# transformers, NumPy; pinned below) outside the checkout, in a folder keyed
# by the pinned versions, so that every clone on this machine (CI's clean
# clone included) reuses it instead of installing about 3 GB of wheels
# again. Idempotent: a complete environment (its stamp file) is left as it
# is. Prints the environment's python as its last line.
#
#   GA_FRONTEND_ROOT   where environments live (default:
#                      ${XDG_CACHE_HOME:-$HOME/.cache}/ga-opt)
#   GA_NO_FRONTEND=1   skip (the importer's tests then report themselves
#                      unsupported)
#   GA_FRONTEND_PYTHON use this python as the front end's, as it is (an
#                      environment that has the pins; the snippets' test
#                      layers a throwaway one over the shared one)
#
# The extras (EXTRAS below: accelerate, which the Hugging Face Trainer
# needs) are a second layer with a stamp of their own: changing them adds
# to a complete environment instead of making it again.
#
# `setup_frontend.sh --locate` installs nothing: it prints the python of a
# complete environment, or nothing (the lit configuration uses it).
#
# Exit status 0 also when PyPI cannot be reached: the front end is then
# missing, and its tests are unsupported; the build never needs it.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

# The pins. A change here makes a new environment (the key below).
PYTHON=/usr/bin/python3.11
PINS=(torch==2.15.0 torch-mlir==20261001 transformers==5.24.0 numpy==2.4.6)
KEY="py311-torch2.15.0-torchmlir20261001-transformers5.24.0-numpy2.4.6"
EXTRAS=(accelerate==1.15.0 nvidia-cudnn-frontend==1.32.0)

ROOT_DIR="${GA_FRONTEND_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/ga-opt}"
VENV="$ROOT_DIR/venv-$KEY"
STAMP="$VENV/.ga-complete"
EXTRAS_STAMP="$VENV/.ga-extras-$(echo "${EXTRAS[*]}" | tr ' =' '_-')"

# extras: installs the second layer into a complete environment, once.
extras() {
  [[ -f "$EXTRAS_STAMP" ]] && return 0
  echo "setup_frontend: installing ${EXTRAS[*]} into $VENV" >&2
  if "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
      "${EXTRAS[@]}" >&2; then
    touch "$EXTRAS_STAMP"
  else
    echo "setup_frontend: pip could not install ${EXTRAS[*]}; the Trainer's" \
         "tests will report themselves unsupported, and the CUDA runtime's" \
         "fused attention (cudnn-frontend's headers) is not built" >&2
  fi
}

if [[ -n "${GA_FRONTEND_PYTHON:-}" ]]; then
  echo "$GA_FRONTEND_PYTHON"
  exit 0
fi
if [[ "${1:-}" == "--locate" ]]; then
  [[ -f "$STAMP" ]] && echo "$VENV/bin/python"
  exit 0
fi
if [[ -n "${GA_NO_FRONTEND:-}" ]]; then
  echo "setup_frontend: skipped (GA_NO_FRONTEND)" >&2
  exit 0
fi
if [[ -f "$STAMP" ]]; then
  extras
  echo "$VENV/bin/python"
  exit 0
fi
if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "setup_frontend: $PYTHON has no venv/ensurepip (Debian: python3-venv);" \
       "the PyTorch front end is not installed" >&2
  exit 0
fi
mkdir -p "$ROOT_DIR"
# A half-made environment (an interrupted install: no stamp) is made again.
rm -rf "$VENV"
start=$(date +%s)
echo "setup_frontend: installing ${PINS[*]} into $VENV (about 3 GB, once per machine)" >&2
"$PYTHON" -m venv "$VENV"
if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
      "${PINS[@]}" >&2; then
  echo "setup_frontend: pip could not install the front end (no PyPI?);" \
       "its tests will report themselves unsupported" >&2
  rm -rf "$VENV"
  exit 0
fi
touch "$STAMP"
extras
echo "setup_frontend: done in $(( $(date +%s) - start )) s" >&2
echo "$VENV/bin/python"
