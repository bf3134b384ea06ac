"""Running extension code without trusting it to behave: off the event loop, with deadlines.

Synchronous functions run as *jobs* on worker threads, so ``time.sleep(20)`` in a hook
neither freezes the sidecar nor outlives its timeout from the caller's point of view: a
watchdog on the event loop notices a step running past its deadline, answers for it and
abandons the job (its thread finishes in its own time; its results are discarded). A job
may be a *chain* of steps (a tool call's hooks and core), each with its own deadline, so
a whole call costs one trip to a worker instead of one per hook. Completions are handed
back to the loop in batches: one wake-up serves every job that finished meanwhile.

Coroutines run on the loop and are cancelled at their deadline. Anything raised,
``SystemExit`` included, comes back as a value.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

logger = logging.getLogger(__name__)

WATCHDOG_SECONDS = 0.02  # how often running steps are checked against their deadlines
STALL_SECONDS = 0.05  # a queued job waiting this long behind busy workers gets a new worker
POOL_SIZE = 2  # workers for ordinary load; more are added only when the queue stops moving


class Abandoned(Exception):
    """Raised inside a job's thread when the loop has given up on the job."""


class Job:
    """One trip to a worker: ``fn(job, *args)``, which marks each step with ``job.step``."""

    __slots__ = ("fn", "args", "future", "step_name", "step_started", "step_timeout", "abandoned", "finished",
                 "value", "error", "runner")

    def __init__(self, runner: "Runner", fn: Callable[..., Any], args: tuple, future: asyncio.Future) -> None:
        self.runner = runner
        self.fn = fn
        self.args = args
        self.future = future
        self.step_name: Any = None
        self.step_started = 0.0
        self.step_timeout = 0.0
        self.abandoned = False
        self.finished = False
        self.value: Any = None
        self.error: BaseException | None = None

    def step(self, name: Any, timeout_s: float) -> None:
        """Start the step ``name`` with its own deadline; raise ``Abandoned`` if the loop gave up."""
        with self.runner.lock:
            if self.abandoned:
                raise Abandoned
            self.step_name = name
            self.step_timeout = timeout_s
            self.step_started = time.monotonic()

    def await_on_loop(self, awaitable: Any) -> Any:
        """For a sync step that returned an awaitable: run it on the loop, wait here."""

        async def run() -> Any:
            return await awaitable

        return asyncio.run_coroutine_threadsafe(_guard(run()), self.runner.loop).result()


class Runner:
    """Worker threads, a batched completion queue and a deadline watchdog for one event loop.

    The loop thread never waits for a lock a worker may hold while it needs the GIL (on
    this kind of machine each such hand-over costs a context switch): submission is a
    queue put, completion a deque append plus at most one wake-up per batch. The lock is
    taken only where the watchdog's verdict and a worker's progress must not cross: a step
    starting, a step's outcome being recorded, a job finishing, a job being abandoned.
    Workers are started by the loop thread only and stay for the life of the process.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, size: int = POOL_SIZE) -> None:
        self.loop = loop
        self.lock = threading.Lock()
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._size = size
        self._live = 0
        self._active: set[Job] = set()  # jobs a worker is running
        self._completed: collections.deque[Job] = collections.deque()
        self._wake_pending = False
        self._watchdog: asyncio.TimerHandle | None = None
        self._outstanding = 0  # submitted and not yet resolved
        self._finished = 0  # jobs finished by workers (progress, for the stall check)
        self._seen_finished = 0
        self._progress_at = time.monotonic()

    # -- loop side -------------------------------------------------------------------------------

    def submit(self, fn: Callable[..., Any], args: tuple, first_timeout_s: float) -> Job:
        job = Job(self, fn, args, self.loop.create_future())
        job.step_timeout = first_timeout_s
        self._outstanding += 1
        self._jobs.put(job)
        if self._live < self._size:
            self._add_worker()
        if self._watchdog is None:
            self._progress_at = time.monotonic()
            self._watchdog = self.loop.call_later(WATCHDOG_SECONDS, self._check)
        return job

    def _drain(self) -> None:
        self._wake_pending = False  # before popping: a job appended from now on wakes us again
        completed = self._completed
        while completed:
            job = completed.popleft()
            if not job.future.done():
                self._outstanding -= 1
                job.future.set_result(job)

    def _check(self) -> None:
        now = time.monotonic()
        overdue = []
        with self.lock:
            for job in list(self._active):
                if not job.finished and not job.abandoned and now - job.step_started > job.step_timeout:
                    job.abandoned = True  # the step is over its deadline: answer for it
                    overdue.append(job)
        for job in overdue:
            self._active.discard(job)
            if not job.future.done():
                self._outstanding -= 1
                job.future.set_result(job)
        if self._finished != self._seen_finished:
            self._seen_finished = self._finished
            self._progress_at = now
        elif not self._jobs.empty() and (overdue or now - self._progress_at > STALL_SECONDS):
            # Jobs are queued and none finished for a while: every worker is slow or stuck.
            self._progress_at = now
            self._add_worker()
        if self._outstanding > 0:
            self._watchdog = self.loop.call_later(WATCHDOG_SECONDS, self._check)
        else:
            self._watchdog = None

    def _add_worker(self) -> None:
        self._live += 1
        threading.Thread(target=self._work, name=f"harness-worker-{self._live}", daemon=True).start()

    # -- worker side -------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            job.step_started = time.monotonic()
            self._active.add(job)
            try:
                job.value = job.fn(job, *job.args)
            except Abandoned:
                pass
            except BaseException as exc:  # noqa: BLE001 - extension code may raise anything
                job.error = exc
            with self.lock:
                if not job.abandoned:
                    job.finished = True
            self._active.discard(job)
            self._finished += 1
            if job.finished:
                self._completed.append(job)
                if not self._wake_pending:
                    self._wake_pending = True
                    try:
                        self.loop.call_soon_threadsafe(self._drain)
                    except RuntimeError:  # the loop is closed: the sidecar is exiting
                        return
            del job


_runners: dict[asyncio.AbstractEventLoop, Runner] = {}  # one loop per process; tests make more


def runner() -> Runner:
    loop = asyncio.get_running_loop()
    found = _runners.get(loop)
    if found is None:
        found = _runners[loop] = Runner(loop)
    return found


@dataclass
class Outcome:
    """What became of one call of extension code."""

    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


def describe_exception(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Raised:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


async def _guard(awaitable: Any) -> Any:
    # SystemExit and KeyboardInterrupt escaping a task would stop the event loop itself;
    # catch them inside the coroutine chain, before the task sees them.
    try:
        return await awaitable
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001
        return _Raised(exc)


async def _await_with_deadline(awaitable: Any, deadline: float) -> Outcome:
    loop = asyncio.get_running_loop()
    task = loop.create_task(_guard(awaitable))
    done, _ = await asyncio.wait({task}, timeout=max(0.0, deadline - loop.time()))
    if not done:
        task.cancel()  # not awaited: a coroutine that swallows cancellation must not hold us
        task.add_done_callback(_consume)
        return Outcome(timed_out=True)
    value = task.result()
    if isinstance(value, _Raised):
        return Outcome(error=value.error)
    return Outcome(value=value)


def _consume(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()


def _single(job: Job, fn: Callable[..., Any], args: tuple, timeout_s: float) -> Any:
    job.step(0, timeout_s)
    return fn(*args)


async def call(fn: Callable[..., Any], args: tuple, timeout_s: float) -> Outcome:
    """Call ``fn(*args)``; sync on a worker thread, async on the loop; bounded by ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    if inspect.iscoroutinefunction(fn):
        try:
            awaitable = fn(*args)
        except BaseException as exc:  # noqa: BLE001
            return Outcome(error=exc)
        return await _await_with_deadline(awaitable, deadline)
    job = await run_job(_single, (fn, args, timeout_s), timeout_s)
    if not job.finished:
        return Outcome(timed_out=True)
    if job.error is not None:
        return Outcome(error=job.error)
    if inspect.isawaitable(job.value):
        return await _await_with_deadline(job.value, deadline)
    return Outcome(value=job.value)


async def run_job(fn: Callable[..., Any], args: tuple, first_timeout_s: float) -> Job:
    """Run ``fn(job, *args)`` on a worker; return the job once it finished or a step timed out.

    ``job.finished`` is False when the watchdog gave up on ``job.step_name``.
    """
    job = runner().submit(fn, args, first_timeout_s)
    try:
        return await job.future  # a cancelled wait cancels job.future, which the runner tolerates
    except asyncio.CancelledError:
        with job.runner.lock:
            job.abandoned = True  # the caller went away ($/cancelRequest): run no further step
        raise
