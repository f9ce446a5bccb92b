"""The threads that work on a pool's hosts at once (health checks, deploys); the main thread
waits for their results with farm/util/waits.py result_of, which a stop can end."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor


@contextlib.contextmanager
def host_threads(max_workers: int) -> Iterator[ThreadPoolExecutor]:
    """A thread pool that a stop does not wait for. On Ctrl-C (or SIGTERM, SIGHUP: farm/cli)
    the work not begun is cancelled and the work under way is left to end with the process,
    where ``with ThreadPoolExecutor`` waits for it: an SSH connect to a host that does not
    answer waits out its whole timeout (farm/cli entry does not wait either)."""
    pool = ThreadPoolExecutor(max_workers=max_workers)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
