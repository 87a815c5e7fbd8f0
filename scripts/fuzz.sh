#!/usr/bin/env bash
#===- scripts/fuzz.sh - Build and run the libFuzzer target ----------------===#
#
#   scripts/fuzz.sh [SECONDS] [extra libFuzzer flags...]
#
# Installs clang-22 and libclang-rt-22-dev if missing, builds ga-fuzz (the
# project's code with coverage and AddressSanitizer) in build-fuzz/, seeds a
# corpus with every lit input and example (split at `// -----`), and runs
# the fuzzer on one core for SECONDS (default 60) with the train dialect's
# dictionary. Findings land in build-fuzz/findings/; the last lines give the
# executions and the coverage.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${GA_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
SECONDS_TO_RUN="${1:-60}"
shift || true

for pkg in clang-22 libclang-rt-22-dev; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
       grep -q "install ok installed"; then
    echo "fuzz: installing $pkg"
    SUDO=(); [[ $EUID -eq 0 ]] || SUDO=(sudo)
    "${SUDO[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q \
      --no-install-recommends "$pkg"
  fi
done

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DGA_BUILD_FUZZER=ON -DGA_SANITIZE=address -DGA_BUILD_TESTS=OFF
fi
ninja -C "$BUILD_DIR" -j"${GA_JOBS:-2}" ga-fuzz

corpus="$BUILD_DIR/corpus"
mkdir -p "$corpus" "$BUILD_DIR/findings"
python3 - "$ROOT" "$corpus" <<'PY'
import os, re, sys, hashlib
root, corpus = sys.argv[1], sys.argv[2]
for sub in ("test", "examples"):
    for dirpath, _, names in os.walk(os.path.join(root, sub)):
        for n in names:
            if n.endswith(".mlir"):
                text = open(os.path.join(dirpath, n)).read()
                for chunk in re.split(r"^// -----\s*$", text, flags=re.M):
                    if chunk.strip():
                        h = hashlib.sha1(chunk.encode()).hexdigest()
                        open(os.path.join(corpus, h), "w").write(chunk)
PY
echo "fuzz: $(ls "$corpus" | wc -l) seed inputs, $SECONDS_TO_RUN s"
ASAN_OPTIONS=detect_leaks=0 "$BUILD_DIR/bin/ga-fuzz" "$corpus" \
  -dict="$ROOT/test/fuzz/train.dict" -max_total_time="$SECONDS_TO_RUN" \
  -max_len=65536 -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
  -artifact_prefix="$BUILD_DIR/findings/" "$@"
