"""Where the chunks of a sweep run: in this process, or on a Dask cluster.

An executor has ``map_unordered(fn, tasks)``, which yields ``(task, fn(*task))`` for
every task as results arrive (any order), ``describe()`` (a line for the metadata) and
``workers`` (how many tasks run at once, for the driver's grouping of small chunks).
Whatever the executor, each chunk is a pure function of (seed, point, chunk index), so
the numbers do not depend on it; only the submitting process writes files.

:class:`DaskExecutor` sends every chunk to a ``dask.distributed`` scheduler: a
``LocalCluster`` of ``--workers N`` processes on this machine, or an existing cluster
given by ``--scheduler ADDRESS`` (see :doc:`/theory/scaling` for starting one, on SLURM
too). A worker that dies takes its running chunks with it; the scheduler runs them
again on another worker (up to Dask's ``distributed.scheduler.allowed-failures``
times), and nothing finished is lost because finished chunks are already stored.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ._params import BadParameters


class SerialExecutor:
    """Run the chunks one after the other in this process, in task order."""

    workers = 1

    def map_unordered(self, fn: Callable, tasks: Sequence[tuple]) -> Iterator[tuple[tuple, Any]]:
        """Yield ``(task, fn(*task))`` for every task, in order."""
        for task in tasks:
            yield task, fn(*task)

    def describe(self) -> str:
        """``"serial"``."""
        return "serial"


def use_compilation_cache() -> None:
    """Keep JAX's compiled programs in its persistent compilation cache, in
    ``spheresde-jax-cache`` under this machine's temporary folder (on this machine only:
    a program compiled for one CPU may not run on another's), unless a cache folder is
    configured already (``JAX_COMPILATION_CACHE_DIR``); ``JAX_ENABLE_COMPILATION_CACHE=false``
    turns it off. A program that one process compiled is then loaded, not compiled
    again, by the others and by later runs: the Dask workers of a sweep, and every
    ``spheresde`` command (the quick ``reproduce``: 141 s from an empty cache, 103 to
    113 s run again)."""
    import os
    import tempfile

    import jax

    if jax.config.jax_compilation_cache_dir is None:
        jax.config.update("jax_compilation_cache_dir",
                          os.path.join(tempfile.gettempdir(), "spheresde-jax-cache"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def _in_worker(fn: Callable, x64: bool, *task):
    """Run one task on a Dask worker with the submitter's floating-point precision and
    the machine's compilation cache (:func:`use_compilation_cache`)."""
    import jax

    jax.config.update("jax_enable_x64", x64)
    use_compilation_cache()
    return fn(*task)


class DaskExecutor:
    """Run the chunks on the workers of a ``dask.distributed`` client (results in the
    order they finish); Ctrl-C or an error cancels what is still queued."""

    def __init__(self, client: Any, label: str, workers: int):
        self.client = client
        self.label = label
        self.workers = max(1, workers)

    def map_unordered(self, fn: Callable, tasks: Sequence[tuple]) -> Iterator[tuple[tuple, Any]]:
        """Submit every task at once; yield ``(task, result)`` as each one finishes."""
        import jax
        from distributed import as_completed

        x64 = bool(jax.config.jax_enable_x64)
        futures = {self.client.submit(_in_worker, fn, x64, *task, pure=False): task
                   for task in tasks}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        finally:
            self.client.cancel(list(futures))

    def describe(self) -> str:
        """Which cluster, e.g. ``"dask LocalCluster, 2 workers"``."""
        return self.label


@contextlib.contextmanager
def executor_for(options: Any) -> Iterator[SerialExecutor | DaskExecutor]:
    """The executor that ``options`` (a :class:`~._driver.RunOptions`) asks for.

    Raises :class:`~._params.BadParameters` (one line) when a Dask scheduler cannot be
    reached or the worker count is not positive.
    """
    if options.scheduler is None and not options.workers:
        yield SerialExecutor()
        return
    import logging

    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise BadParameters("`workers` and `scheduler` need dask.distributed: "
                            "pip install 'spheresde[dask]'") from None

    if options.scheduler is not None:
        try:
            client = Client(options.scheduler, timeout="5s")
        except (OSError, TimeoutError, ValueError) as err:
            raise BadParameters(f"`scheduler='{options.scheduler}'`: cannot connect to a Dask "
                                f"scheduler there ({err})") from None
        with client:
            workers = client.scheduler_info().get("workers", {})
            yield DaskExecutor(client, f"dask scheduler {options.scheduler} "
                                       f"({len(workers)} workers at start)",
                               sum(w.get("nthreads", 1) for w in workers.values()))
        return
    if options.workers < 1:
        raise BadParameters(f"`workers` must be >= 1, got {options.workers}")
    with contextlib.ExitStack() as stack:
        stack.enter_context(_worker_environment())
        with _without_interrupts():
            # no dashboard; the scheduler's HTTP server (always started) on a free port, so
            # that two local clusters on one machine do not contend for its default 8787
            cluster = stack.enter_context(LocalCluster(
                n_workers=options.workers, threads_per_worker=1, processes=True,
                dashboard_address=None, scheduler_kwargs={"dashboard_address": ":0"},
                silence_logs=logging.ERROR))
            client = stack.enter_context(Client(cluster))
        yield DaskExecutor(client, f"dask LocalCluster, {options.workers} workers",
                           options.workers)


#: What Dask sets in its workers' environment that this package's workers do without.
DROPPED_WORKER_ENVIRON = ("MALLOC_TRIM_THRESHOLD_",)


def _worker_environment() -> Any:
    """Dask's configuration for the local workers' environment, less
    :data:`DROPPED_WORKER_ENVIRON` (a ``dask.config.set`` context).

    Dask gives its workers ``MALLOC_TRIM_THRESHOLD_=65536``, so that they hand freed
    memory back to the system. Setting it also turns off glibc's dynamic mmap threshold:
    every NumPy temporary above 128 KiB is then mapped and unmapped afresh, its pages
    faulted in each time. The formation laws and the absorbers' host checks make many
    such temporaries, and the same chunk ran 1.5 to 2 times slower with it (``hybrid``
    at the paper's size: 9.3 s against 4.6 s; ``tokens``, n = 8: 37 s against 22 s).
    Without it glibc keeps freed memory for reuse, as in any Python process. The
    single-threaded BLAS and OpenMP of Dask's workers stay: two workers on two cores."""
    import dask.config

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {})
    kept = {k: v for k, v in environ.items() if k not in DROPPED_WORKER_ENVIRON}
    return dask.config.set({"distributed.nanny.pre-spawn-environ": kept})


@contextlib.contextmanager
def _without_interrupts() -> Iterator[None]:
    """Start a local cluster that Ctrl-C stops through this process only.

    Ctrl-C in a terminal signals the whole process group: each worker process would
    raise KeyboardInterrupt and print its traceback while this process closes them.
    Threads and processes inherit the signal mask of the thread that starts them, so
    SIGINT is blocked while the cluster's event-loop thread (which starts the nannies'
    worker processes, also those that replace a dead one) is made: the workers never
    see it. An interrupt meanwhile (delivered by another thread of this process) is
    raised once the cluster is up and closable, not inside its half-made start.
    Python's resource tracker is started first: starting it unblocks SIGINT in the
    thread that does (CPython's bpo-33613), which would be the one starting the workers.
    """
    import signal
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    pending: list[int] = []
    # Python's handlers live in the main thread; one set outside Python (None) is kept
    main = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is not None)
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum)
                             ) if main else None
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if main:
            signal.signal(signal.SIGINT, previous)
    if pending:
        raise KeyboardInterrupt


__all__ = ["DaskExecutor", "SerialExecutor", "executor_for"]
