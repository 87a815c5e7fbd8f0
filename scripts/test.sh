#!/usr/bin/env bash
#===- scripts/test.sh - Set up, build and run every test ------------------===#
#
# Sets up and builds (scripts/build.sh), then runs the lit suites, which hold
# the FileCheck tests of the dialect, the passes, the plugin and the tools and,
# as a nested suite, every GoogleTest unit test. The last line gives the
# counts: `tests: N passed, N failed, N skipped`. A test that reports itself
# unsupported (for example one that needs a GPU) counts as skipped, never as
# passed. Before it, the suite's time and its ten slowest tests. Exits
# non-zero when any test fails.
#
# --no-build: run the suite on the build as it is (.ci/run builds first, to
# time the build and the suite apart). Arguments after the options go to
# lit (for example a test's path, or --filter REGEX).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/build_dir.sh"

build=1
if [[ "${1:-}" == "--no-build" ]]; then
  build=0
  shift
fi
if ((build)); then
  "$ROOT/scripts/build.sh"
elif [[ ! -f "$BUILD_DIR/test/lit.site.cfg.py" ]]; then
  echo "test: error: --no-build, but $BUILD_DIR is not built" \
       "(run scripts/build.sh first)" >&2
  exit 1
fi

results="$BUILD_DIR/test-results.xml"
rm -f "$results"
status=0
start=$(date +%s)
targets=("$@")
((${#targets[@]})) || targets=("$BUILD_DIR/test")
/usr/lib/llvm-22/bin/lit -sv --xunit-xml-output "$results" "${targets[@]}" \
  || status=$?
elapsed=$(( $(date +%s) - start ))

python3 - "$results" "$status" "$elapsed" <<'PY'
import sys
import xml.etree.ElementTree as ET

path, status, elapsed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
try:
    cases = list(ET.parse(path).getroot().iter("testcase"))
except (OSError, ET.ParseError) as err:
    print(f"test: error: no lit results in {path}: {err}")
    print("tests: 0 passed, 1 failed")
    sys.exit(1)
timed = sorted(((float(c.get("time") or 0), c.get("classname", "") + "/" +
                 c.get("name", "")) for c in cases), reverse=True)
print(f"test: suite done in {elapsed} s; the ten slowest tests:")
for seconds, name in timed[:10]:
    print(f"test: {seconds:8.1f} s  {name}")
passed = failed = skipped = 0
for case in cases:
    if case.find("failure") is not None or case.find("error") is not None:
        failed += 1
    elif case.find("skipped") is not None:
        skipped += 1
    else:
        passed += 1
if status != 0 and failed == 0:
    failed = 1  # lit failed without a failing test case: count it
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
PY
