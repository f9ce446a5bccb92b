"""A running run's sign of life in its store, for runners on other machines (runs.py's
recover_orphans): beaten once on entry, then every HEARTBEAT_S from a thread of its own with its
own connection, until the run's session ends. A beat that fails (the server restarting) is tried
again at the next one: the store's health is the run's end's business, not the heartbeat's."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from farm.results.store.location import StoreLocation
from farm.results.store.runs import HEARTBEAT_S
from farm.results.store.runstore import RunStore
from farm.util.errors import StoreError


@contextlib.contextmanager
def heartbeat(location: StoreLocation, run_id: str, every: float = HEARTBEAT_S) -> Iterator[None]:
    stop = threading.Event()

    def beat() -> None:
        with contextlib.suppress(StoreError), RunStore(location, create=False) as store:
            store.beat(run_id)

    def beating() -> None:
        while not stop.wait(every):
            beat()

    beat()
    thread = threading.Thread(target=beating, name=f"heartbeat {run_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
