"""Which precision standard can judge which inputs: run a tier's accepted cases through a
correct kernel (the CPU twin, and PyTorch's own kernel) and count, per dtype, dy family and size,
how often each public standard fails a correct result. suites/gates.py is chosen from this.

    .venv/bin/python benchmarks/gate_survey.py --tier nightly [--kernel twin|torch]

Takes about 3 minutes for the nightly tier on 2 cores.
"""

from __future__ import annotations

import argparse
import collections

from farm.agent.backends import twin
from golden import benchmark, inputs, reference, soc, standards
from suites import gates, matrix


def size_bucket(numel: int) -> str:
    return "<=1k" if numel <= 1024 else ("<=16k" if numel <= 16384 else ">16k")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", default="nightly")
    parser.add_argument("--kernel", default="twin", choices=("twin", "torch"))
    args = parser.parse_args()

    cases = [c for c in matrix.expand(args.tier) if c.accepted and c.numel and c.special == "none"]
    total: collections.Counter = collections.Counter()
    fails: dict = collections.defaultdict(collections.Counter)
    gated_fails = []
    for case in cases:
        dy, y = inputs.make_inputs(
            case.shape, case.dtype, case.axes, case.y_dist, case.dy_dist, case.special, case.seed
        )
        golden = reference.log_softmax_grad(dy, y, case.axes)
        bench = benchmark.torch_benchmark(dy, y, case.axes, case.dtype)
        if args.kernel == "torch":
            out = bench
        else:
            out = twin.run(dy, y, case.axes, soc.representative_soc(case.family).name).out
        verdicts = standards.judge_all(out, golden, case.dtype, bench, level=case.level or "L0")
        dy_family = "cancel" if gates.cancellation(case.y_dist, case.dy_dist) else case.dy_dist
        key = (case.dtype, dy_family, size_bucket(case.numel))
        total[key] += 1
        for name, verdict in verdicts.items():
            fails[key][name] += not verdict.passed
        if not verdicts[case.standard].passed:
            gated_fails.append((case.id, verdicts[case.standard].reason))

    names = standards.STANDARDS
    print(
        f"{'dtype':<9} {'dy':<9} {'size':<6} {'cases':>5}  " + "  ".join(f"{n:>17}" for n in names)
    )
    for key in sorted(total):
        row = "  ".join(f"{fails[key][n]:>17}" for n in names)
        print(f"{key[0]:<9} {key[1]:<9} {key[2]:<6} {total[key]:>5}  {row}")
    print(f"\n{len(cases)} cases; failed under their own gate: {len(gated_fails)}")
    for case_id, reason in gated_fails:
        print(f"  {case_id}: {reason}")


if __name__ == "__main__":
    main()
