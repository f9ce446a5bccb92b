"""What every backend is (:class:`Backend`): the one entry farm/agent/execute.py calls, with the
case's tensors and what the case says of the call; it returns the call's
:class:`~farm.agent.backends.result.BackendResult`. Each backend module's ``run_call`` is one
(native.py, torch_backend.py, acl.py); the type checker holds them to this signature.

Standard library only at run time (numpy is named for the type checker alone): identify imports
the backends package on an idle agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from farm.agent.backends.result import BackendResult
    from golden.layouts import Layout


class Backend(Protocol):
    def __call__(
        self,
        dy: np.ndarray | None,
        y: np.ndarray | None,
        axes: Sequence[int],
        soc: str | None,
        *,
        out_dtype: str,
        out_shape: tuple[int, ...] | None = None,
        missing: str | None = None,
        api: str = "dim",
        device: int = 0,
        out_layout: Layout | None = None,
    ) -> BackendResult:
        """One operator call. ``dy``, ``y``: the inputs in their views (None: the case leaves
        that tensor out, ``missing``); ``axes``: the dims reduced; ``soc``: the host's SoC;
        ``out_dtype``/``out_shape``: the output asked for (a case dtype name; None: dy's
        shape); ``api``: "dim" (the seed's one-dim entry) or "axes" (the dim list's);
        ``device``: the chip; ``out_layout``: the output's view (golden/layouts.py)."""
        ...
