#!/usr/bin/env bash
# Set-up, then the main job: the smoke tier on the embedded default pool, ending with a report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh run
exec .venv/bin/farm run --tier smoke "$@"
