"""The host side of the farm: an agent that serves the wire protocol on stdin/stdout.

It runs on a host from the deployed bundle with only python3 + numpy + ml_dtypes, so nothing in
this package imports paramiko, rich, pytest or torch at import time. ``python -m farm.agent
--help`` for its command line.
"""

from farm.protocol import FARM_VERSION

AGENT_VERSION = FARM_VERSION

__all__ = ["AGENT_VERSION"]
