#!/usr/bin/env bash
# Set-up, then the project's own tests. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh test
exec .venv/bin/python -m pytest -n 2 -q "$@" tests
