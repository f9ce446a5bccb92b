"""No process outlives a killed farm command: a `farm merge` (or `farm report`) killed with
SIGKILL while its report's plots were drawn left its two plot workers drawing on for minutes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from farm.util.proc import alive, children

# A command drawing the plots of a report, its workers stuck on their plots (as on a nightly's
# thousands): each worker says it has begun, then never ends by itself.
DRAWING = """
import sys, threading
from pathlib import Path
from farm.run import case_plots

def stuck(results_dir, source):
    print("drawing", flush=True)
    threading.Event().wait()

case_plots.draw_one = stuck
case_plots._preload = lambda: None
case_plots._draw_all(Path(sys.argv[1]), ["a", "b", "c", "d"], 2)
"""


def test_a_killed_command_takes_its_plot_workers_with_it(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", DRAWING, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        said = ""  # both workers are at work (their words may interleave on the one pipe)
        while said.count("drawing") < 2:
            more = proc.stdout.read(1)
            assert more, f"the command ended having said only {said!r}"
            said += more
        workers = children(proc.pid)
        assert len(workers) == 2, workers
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # The kernel ends them as their parent goes; a machine under load may take a moment to.
    deadline = time.monotonic() + 30
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [w for w in workers if alive(w)]
    for w in left:  # not to leave them behind when the test fails
        os.kill(w, signal.SIGKILL)
    assert left == []
