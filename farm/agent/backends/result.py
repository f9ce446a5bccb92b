"""What every backend returns for one call."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class BackendResult:
    status: int  # aclnn status: 0, 161001, 161002; -1 when the backend has none to give
    reason: str | None  # golden.contract reason name, when the backend reports one
    message: str
    out: np.ndarray | None
    workspace: int
    tiling: dict | None
    seconds: float  # the call alone: planning and running the operator
    # Whether the storage around a strided or offset out was left as it was (NaN) by the call:
    # False = the operator wrote outside its output view. None: not checked (no output, or an
    # output the caller allocated).
    out_guard_ok: bool | None = None
    # What each layer of the operator's parameter checks said (farm/agent/record.py HostChecks);
    # None from a backend that cannot say.
    checks: dict | None = None
    # Where the operator ran on the device path (farm/agent/record.py DeviceRun); None elsewhere.
    device_run: dict | None = None
    # What the operator's code left alive (aclTensors, aclIntArrays, executors), in words; ""
    # none or not checked (the acl backend checks it on the emulated runtime).
    leaked: str = ""
    # What the operator's aclnn layer answered wrongly on the error paths the acl backend tried
    # after a good call (farm/agent/backends/acl_probes.py), in words; "" none or not tried.
    error_paths: str = ""
