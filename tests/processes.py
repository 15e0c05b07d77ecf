"""Child processes that tests and benchmarks start: one way to start, wait ready, stop and read logs.

:class:`ChildProcess` is what the hub, the simulator, each syncer and the proxies have in common: a
command run with its output appended to a log file, a readiness probe polled with a deadline (failing at
once when the process exits instead), a stop that sends SIGTERM and kills after a grace period, and the
log read back; :class:`Program` is one for a command a test runs as is (``spacehub up``). :class:`Output`
collects the output of a short-lived client (kubectl) through pipes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.polling import wait_for


def stop_process(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, timeout: float = 20,
                 group: bool = False) -> int:
    """Signal ``proc`` and wait for it (SIGKILL after ``timeout``, to its whole process group when ``group``:
    a program started in its own session with workers it forked); its exit status."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            if group:
                # The unreaped leader still holds its id, so the group cannot name anyone else's processes.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
            proc.wait()
    return proc.returncode


class ChildProcess:
    """A long-running program started by a test, its output appended to :meth:`output_file` (one
    ``--- start`` line per start, so a restart keeps the earlier runs' output).

    A mixin for the harnesses' dataclasses: they hold ``proc`` (``None`` while not running) and name
    ``log_path``.
    """

    proc: subprocess.Popen[bytes] | None
    log_path: Path
    own_session = False  # a program that forks workers runs in its own session, so stop() can end them all

    @property
    def label(self) -> str:
        """What the process is, in failure messages."""
        return type(self).__name__

    def output_file(self) -> Path:
        """Where the program's stdout and stderr go."""
        return self.log_path

    def launch(self, cmd: Sequence[str], env: dict[str, str] | None = None,
               cwd: Path | None = None) -> subprocess.Popen[bytes]:
        """Start ``cmd`` with stdout and stderr appended to :meth:`output_file`."""
        output = self.output_file()
        output.parent.mkdir(parents=True, exist_ok=True)
        with output.open("ab") as out:
            out.write(f"--- start {' '.join(cmd)}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         env=env, cwd=cwd, start_new_session=self.own_session)
        return self.proc

    def wait_ready(self, probe: Callable[[], bool], timeout: float,
                   retry_on: tuple[type[BaseException], ...] = ()) -> None:
        """Poll ``probe`` until true; a process that exits meanwhile fails at once with its output's tail."""
        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.label} exited with {self.proc.returncode}: {self.diagnostics()}")
            return probe()
        try:
            wait_for(ready, timeout=timeout, retry_on=retry_on, message=f"{self.label} to be ready")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.diagnostics()}") from None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int | None:
        """Signal the process and wait for it (SIGKILL after ``timeout``); its exit status, None when it was
        not running (``-sig`` after a graceful shutdown: our servers re-raise the signal they handled)."""
        proc, self.proc = self.proc, None
        return None if proc is None else stop_process(proc, sig, timeout, group=self.own_session)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def runs(self) -> list[str]:
        """The output of each start, oldest first."""
        return self.log().split("--- start ")[1:]

    def diagnostics(self) -> str:
        """The tail of the output, for failure messages."""
        return f"log {self.log_path}:\n{self.log()[-3000:]}"


@dataclass
class Program(ChildProcess):
    """A program a test runs itself (``spacehub up``, a hub with the operator's own certificate)."""

    log_path: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self, cmd: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.launch(cmd, env=env, cwd=cwd)


class Output:
    """A subprocess's stdout and stderr, collected as they come (threads), to poll with deadlines."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.out = bytearray()
        self.err = bytearray()
        self._drains = [threading.Thread(target=self._drain, args=(stream, into), daemon=True)
                        for stream, into in ((proc.stdout, self.out), (proc.stderr, self.err))]
        for drain in self._drains:
            drain.start()

    @staticmethod
    def _drain(stream: Any, into: bytearray) -> None:
        while chunk := stream.read1(65536):
            into.extend(chunk)

    @property
    def text(self) -> str:
        return self.out.decode(errors="replace")

    @property
    def errors(self) -> str:
        return self.err.decode(errors="replace")

    def ended(self) -> bool:
        """The process exited and its last output has been read: its exit alone can come before the
        threads read what it wrote just before."""
        return self.proc.poll() is not None and not any(drain.is_alive() for drain in self._drains)

    def stop(self) -> int:
        return stop_process(self.proc)
