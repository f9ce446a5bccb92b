"""One case per process, the way file-based ST tools run: a BASELINE for benchmarks/throughput.py.

    ssh host 'cd <deployed agent bundle> && PYTHONPATH=<repo>/benchmarks LSG_NATIVE_LIB=<lib> \
        python -m oneshot --workdir <host workdir> --backend native --device 0' < case.json

Reads one case (the JSON of ``Case.to_dict()``) from stdin, runs it with the agent's own executor
(``farm.agent.execute.run_case``: inputs from the seed, the operator through the backend, the
golden, the metrics, the verdict) and prints the result record as one JSON line on stdout.

The host's identity comes from its own declaration (the environment sshd gives the session, or
``<workdir>/host.toml``), as in the agent, but without the agent's dependency survey: a one-shot
tool would not do one either. Nothing here is used by the farm itself.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    parser = argparse.ArgumentParser(prog="python -m oneshot", description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=None, help="the host's farm work directory")
    parser.add_argument("--backend", default="native")
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args(argv)

    from farm.agent.execute import run_case
    from farm.agent.identity import Identity, declared_identity

    declared = declared_identity(args.workdir, use_npu_smi=False)
    identity = Identity(
        host=socket.gethostname(),
        soc=declared.soc,
        devices=declared.devices,
        source=declared.source,
        emulated=declared.emulated,
        python=sys.executable,
    )
    imported = time.perf_counter()
    case = json.loads(sys.stdin.read())
    record = run_case(case, args.backend, args.device, identity)
    record["timings"]["process_s"] = time.perf_counter() - started
    record["timings"]["imports_s"] = imported - started
    sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
