"""How the agent runs the operator: one module per backend, each with ``run_call``, a
base.py Backend (the signature the type checker holds them to).

native: the operator's C ABI library from the deployed package (the emulated real Ascend C kernel
        of `farm build --target ascendc-cpu`, or the CPU twin of `--target twin`); native.py.
torch:  PyTorch's LogSoftmax backward on the host's device; torch_backend.py.
acl:    the operator package's aclnn entry through ACL: on an NPU with CANN, else on the emulated
        ACL runtime (op/acl_emu) with the real kernel on the emulated device; acl.py.
"""

# The backends, in the order `farm run --backend` offers them (native is the default).
BACKENDS = ("native", "torch", "acl")
