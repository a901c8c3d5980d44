#!/usr/bin/env bash
# Runs every test: installs what is missing, builds the package (the runner and the example extension land beside
# the test bundle), then runs the Swift tests, which start real extension processes.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-dependencies.sh
swift build --build-tests
swift test --skip-build
