#!/usr/bin/env bash
# Set-up, then the linters: ruff, ruff format and the type checker (mypy over farm, golden, suites).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh run >/dev/null
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
