"""One mistake planted in a copy of the acl backend's use of ACL (farm/agent/backends/
acl_session.py), then one strided case of the smoke tier through the backend, in a process of its
own: `python tests/op/acl_planted_session.py <mistake>` prints what happened as one JSON object.
tests/op/test_acl_backend_mistakes.py requires each mistake to be caught with a message naming the
API, never to come back as a (wrong) answer."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from farm.run.requests import case_request

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

SESSION = REPO / "farm" / "agent" / "backends" / "acl_session.py"
# mistake: (the text of the real module, what the copy has instead)
MISTAKES = {
    "no_sync_before_copy_back": (
        "synced = acl.aclrtSynchronizeStream(device.stream)",
        "synced = api.ACL_SUCCESS",
    ),
    "copy_kind_swapped": (
        "api.ACL_MEMCPY_HOST_TO_DEVICE,",
        "api.ACL_MEMCPY_DEVICE_TO_HOST,",
    ),
    "leaked_device_buffer": (
        'calls += [(libs.ascendcl.aclrtFree, p, "aclrtFree") for p in buffers]',
        'calls += [(libs.ascendcl.aclrtFree, p, "aclrtFree") for p in buffers[:-1]]',
    ),
    "tensor_not_destroyed": (
        'calls = [(libs.nnopbase.aclDestroyTensor, h, "aclDestroyTensor") for h in handles if h]',
        'calls = [(libs.nnopbase.aclDestroyTensor, h, "aclDestroyTensor") '
        "for h in handles[:-1] if h]",
    ),
    "workspace_of_size_zero": (
        "phase_two(workspace, ws.value, executor, device.stream)",
        "phase_two(workspace, 0, executor, device.stream)",
    ),
    "contiguous_strides_for_a_strided_view": (
        "_int64s(t.strides)",
        "_int64s([int(np.prod(t.dims[i + 1 :])) for i in range(len(t.dims))])",
    ),
}


def planted(mistake: str):
    old, new = MISTAKES[mistake]
    text = SESSION.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"{mistake}: {old!r} is not in acl_session.py exactly once; update it")
    spec = importlib.util.spec_from_loader("planted_acl_session", loader=None)
    assert spec is not None  # a name and no loader always make a spec
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    exec(compile(text.replace(old, new), f"planted:{mistake}", "exec"), module.__dict__)
    from farm.agent.backends import acl_session

    module.__dict__["AclCallError"] = acl_session.AclCallError  # what the backend's callers catch
    return module


def main(mistake: str) -> dict:
    from farm.agent.backends import acl
    from farm.agent.execute import case_layout, make_call_inputs
    from golden.soc import representative_soc
    from suites import matrix

    module = planted(mistake)
    acl.run_op = module.run_op  # the backend now uses the planted copy
    case = next(
        c
        for c in matrix.expand("smoke")
        if c.layout == "strided" and c.accepted and c.family == "ascend910b"
    )
    d = case_request(case)
    dy, y = make_call_inputs(d)
    assert dy is not None and y is not None  # an accepted case makes both tensors
    acl.declare_host(representative_soc(case.family).name, 1)
    try:
        result = acl.run(dy, y, case.axes, out_dtype=dy.dtype, out_layout=case_layout(d, "out"))
    except acl.AclCallError as exc:
        return {"caught": True, "message": str(exc)}
    return {"caught": False, "status": result.status, "message": result.message}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
