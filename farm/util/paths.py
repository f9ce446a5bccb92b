"""Where the orchestrator finds its checkout and keeps what it makes (not shipped to hosts)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DIST_DIR = REPO_ROOT / "dist" / "op"  # built operator packages
# Empty is unset, as for FARM_STORE (a CI variable left empty must not make the shell's directory
# the runs directory).
RUNS_DIR = Path(os.environ.get("FARM_RUNS") or REPO_ROOT / "runs")
STATE_DIR = RUNS_DIR / "state"  # quarantine, agent bundle: kept from run to run
