"""Where the orchestrator finds its checkout and keeps what it makes (not shipped to hosts)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DIST_DIR = REPO_ROOT / "dist" / "op"  # built operator packages
RUNS_DIR = Path(os.environ.get("FARM_RUNS", REPO_ROOT / "runs"))
STATE_DIR = RUNS_DIR / "state"  # quarantine, agent bundle: kept from run to run
