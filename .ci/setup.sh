#!/usr/bin/env bash
# All set-up, safe to rerun: system packages (when root), the virtualenv, the operator package
# (the default target: the real Ascend C kernel on the CPU emulation) and Allure 3. `setup.sh run`
# is enough for `farm run`; `setup.sh test` adds what the tests need (an OpenSSH server for the SSH
# lab, a PostgreSQL server for the shared store's tests, Chromium for the report test and, on a
# machine that is not aarch64, Debian's aarch64 cross compiler and qemu-user:
# tests/op/test_cross_build.py).
set -euo pipefail
cd "$(dirname "$0")/.."
purpose=${1:-run}

need=()
if [ "$purpose" = test ]; then
  [ -x /usr/sbin/sshd ] || need+=(openssh-server)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
  command -v chromium >/dev/null || need+=(chromium)
  if [ "$(uname -m)" != aarch64 ]; then  # on aarch64 the aarch64 build is native
    command -v aarch64-linux-gnu-g++ >/dev/null || need+=(g++-aarch64-linux-gnu)
    command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
  fi
fi
command -v node >/dev/null || need+=(nodejs npm)
command -v g++ >/dev/null || need+=(g++)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "setup: missing ${need[*]}; install them (e.g. sudo apt-get install ${need[*]})" >&2
  fi
fi

# The farm itself needs python 3.11 or newer (hosts: 3.10, for the agent); $PYTHON names another.
python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "setup: the farm needs python 3.11 or newer here; $python is $("$python" --version 2>&1 || echo missing): install one (e.g. python3.11) and run PYTHON=python3.11 bash $0 $purpose" >&2
  exit 2
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'

if [ -f reports/package-lock.json ]; then
  (cd reports && npm ci --silent --no-audit --no-fund)
fi

# The genuine ACL headers (from the torch-npu wheel on PyPI): the package's acl backend is built
# against them. Without PyPI the build goes on without it (`farm run --backend acl` says so).
.venv/bin/python -m farm.pool.acl_sdk --quiet || echo "setup: no genuine ACL headers; the acl backend is not built" >&2
.venv/bin/farm build --quiet
