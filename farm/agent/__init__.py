"""The host side of the farm: an agent that serves the wire protocol on stdin/stdout.

This package is exactly what ships to a host (with golden/): it runs there with only python3 +
numpy + ml_dtypes, so nothing here imports the rest of the farm, paramiko, rich, pytest, or torch
at import time (tests/agent/test_boundary.py holds it to that). ``python -m farm.agent --help`` for
its command line.
"""
