#!/usr/bin/env bash
# Set-up, then the project's own tests. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh test
# A file's tests on one worker (its module fixtures are made once), the heaviest files first
# (tests/conftest.py orders them), so the two workers finish together.
exec .venv/bin/python -m pytest -n 2 --dist loadfile -q "$@" tests
