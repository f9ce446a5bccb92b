#!/usr/bin/env bash
# Set-up, then the project's own tests. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh test
# The shared store's tests run against a real PostgreSQL server: a throwaway one on loopback,
# stopped when the tests end (FARM_TEST_POSTGRES, unless the caller gives one).
if [ -z "${FARM_TEST_POSTGRES:-}" ]; then
  pg_dir=$(mktemp -d -u "${TMPDIR:-/tmp}/farm-pg.XXXXXX")
  trap 'bash .ci/postgres.sh stop "$pg_dir"' EXIT
  if url=$(bash .ci/postgres.sh start "$pg_dir"); then
    export FARM_TEST_POSTGRES=$url
  else
    echo "test: no PostgreSQL server for the store tests (they skip, or fail under CI)" >&2
  fi
fi
# A file's tests on one worker (its module fixtures are made once), the heaviest files first
# (tests/conftest.py orders them; --no-loadscope-reorder keeps that order, where pytest-xdist
# would hand out the files with the most tests first and leave the slow whole-farm runs for the
# end), so the workers finish together. One worker more than the cores: many tests wait (for a
# timeout, a frozen host, a lock another run holds), and the extra worker's tests use those
# cores meanwhile (benchmarks/RESULTS.md, "CI time" of 2026-12-03). The 25 slowest tests are
# listed at the end: what to look at when CI nears its 15 minutes.
# Each emulated-device library keeps its core pointer in initial-exec TLS (64 bytes of glibc's
# static TLS surplus, op/ascendc_cpu/src/device.cpp); a test process loads dozens (every planted
# bug, mutants, the ACL op-api, torch's libgomp), more than the default 512 bytes hold.
export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.rtld.optional_static_tls=16384"
workers=$(( $(nproc) + 1 ))
.venv/bin/python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder -q --durations=25 "$@" tests
