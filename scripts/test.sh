#!/usr/bin/env bash
#===- scripts/test.sh - Set up, build and run every test ------------------===#
#
# Sets up and builds (scripts/build.sh), then runs the lit suites, which hold
# the FileCheck tests of the dialect, the passes, the plugin and the tools and,
# as a nested suite, every GoogleTest unit test. The last line gives the
# counts: `tests: N passed, N failed, N skipped`. A test that reports itself
# unsupported (for example one that needs a GPU) counts as skipped, never as
# passed. Exits non-zero when any test fails.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# GA_SANITIZE=address,undefined builds an instrumented copy in its own
# directory (build-sanitize/ unless GA_BUILD_DIR says otherwise).
if [[ -n "${GA_SANITIZE:-}" ]]; then
  BUILD_DIR="${GA_BUILD_DIR:-$ROOT/build-sanitize}"
else
  BUILD_DIR="${GA_BUILD_DIR:-$ROOT/build}"
fi

"$ROOT/scripts/build.sh"

results="$BUILD_DIR/test-results.xml"
rm -f "$results"
status=0
/usr/lib/llvm-22/bin/lit -sv --xunit-xml-output "$results" \
  "$BUILD_DIR/test" || status=$?

python3 - "$results" "$status" <<'PY'
import sys
import xml.etree.ElementTree as ET

path, status = sys.argv[1], int(sys.argv[2])
try:
    cases = ET.parse(path).getroot().iter("testcase")
except (OSError, ET.ParseError) as err:
    print(f"test: error: no lit results in {path}: {err}")
    print("tests: 0 passed, 1 failed")
    sys.exit(1)
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
