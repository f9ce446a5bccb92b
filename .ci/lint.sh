#!/usr/bin/env bash
# Set-up, then the linters: ruff, ruff format, the type checker (mypy) and the layers
# (lint-imports: pyproject.toml [tool.importlinter], no import up a floor, no import cycle).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh run >/dev/null
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/lint-imports --no-cache
