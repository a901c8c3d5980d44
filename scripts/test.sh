#!/usr/bin/env bash
# Runs every test: installs what is missing, builds the package (the runner and the example extension land beside
# the test bundle), then runs the Swift tests, which start real extension processes, nginx and the host itself,
# then the shipping tests below.
# One at a time: many tests wait on processes, which blocks Swift's cooperative threads, and on two cores a test
# waiting behind the others would see its own deadlines pass (about a minute in all, against half that in parallel).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-dependencies.sh
swift build --build-tests
swift test --skip-build --no-parallel

# The Python binding (SDK/Python) installed with pip into a virtual environment, tested with pytest against the
# build's library and real daemons.
Tests/Python/run.sh

# The benchmark suite in its smoke mode (small sizes, one run), so that it cannot rot; it asserts no timing.
Benchmarks/run.sh --smoke

# The fuzz targets, 5 seconds each, so that they cannot rot (the tests above replay their corpus).
Fuzz/run.sh --smoke

# What a user gets, tested as a user gets it (Tests/Shipping): the SDK's documentation complete and building; code
# written against bahost refused where Apple's SDK would refuse it; every README snippet building as written; a release installed with scripts/install.sh, projects from `bahost new
# extension` built and run under it, and uninstalled; the .deb installed with apt into a clean Debian root (chroot:
# root or sudo). The install test makes the release build the .deb test packages.
scripts/docs.sh --check
Tests/Shipping/apple-api.sh
Tests/Shipping/readme-snippets.sh
Tests/Shipping/install-and-scaffold.sh
SKIP_BUILD=1 Tests/Shipping/deb.sh
