"""How the agent runs the operator: one module per backend, each with ``run_call``."""

# The backends, in the order `farm run --backend` offers them (twin is the default).
BACKENDS = ("twin", "torch")
