#!/usr/bin/env bash
# Runs every test: installs what is missing, builds the package (the runner and the example extension land beside
# the test bundle), then runs the Swift tests, which start real extension processes, nginx and the host itself.
# One at a time: many tests wait on processes, which blocks Swift's cooperative threads, and on two cores a test
# waiting behind the others would see its own deadlines pass (about a minute in all, against half that in parallel).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-dependencies.sh
swift build --build-tests
swift test --skip-build --no-parallel

# The benchmark suite in its smoke mode (small sizes, one run), so that it cannot rot; it asserts no timing.
Benchmarks/run.sh --smoke
