# scripts/build_dir.sh - The build directory, for the scripts that source it
# (setup.sh, build.sh, test.sh) after setting ROOT to the checkout:
# GA_SANITIZE=address,undefined builds an instrumented copy in its own
# directory (build-sanitize/ unless GA_BUILD_DIR says otherwise).
if [[ -n "${GA_SANITIZE:-}" ]]; then
  BUILD_DIR="${GA_BUILD_DIR:-$ROOT/build-sanitize}"
else
  BUILD_DIR="${GA_BUILD_DIR:-$ROOT/build}"
fi
