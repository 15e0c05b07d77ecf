"""The remote-command channel protocol over WebSocket (``v5.channel.k8s.io``, ``v4.channel.k8s.io``).

What kube-apiserver speaks to kubectl for ``pods/exec`` and ``pods/attach``: every binary message starts with
a channel byte, the rest is that channel's data.

* 0 stdin (client → server), 1 stdout, 2 stderr (server → client);
* 3 error: one JSON ``metav1.Status`` at the end (``Success``, or ``Failure`` with reason ``NonZeroExitCode``
  and an ``ExitCode`` cause holding the exit status), after which the server closes the WebSocket (client-go
  reads the error channel to its end, so the status only counts once the connection closes);
* 4 resize (client → server): JSON ``{"Width": w, "Height": h}``;
* 255 close (v5): ``[255, channel]`` half-closes one channel; kubectl sends it for stdin when its input ends
  (client-go sends it under v4 too; this side takes it under both).

As kube-apiserver does, the server opens with an empty message on the lowest channel it writes (stdout, else
stderr, else error) so that the client knows the streams are up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
PROTOCOLS = (V5, V4)

STDIN = 0
STDOUT = 1
STDERR = 2
ERROR = 3
RESIZE = 4
CLOSE = 255


def frame(channel: int, data: bytes = b"") -> bytes:
    return bytes((channel,)) + data


def parse(message: bytes) -> tuple[int, bytes] | None:
    """(channel, data) of a binary message; None for an empty one (ignored, as upstream ignores it)."""
    if not message:
        return None
    return message[0], message[1:]


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def exit_status(code: int) -> dict[str, Any]:
    """What kube-apiserver's stream translator reports for a command that exited non-zero."""
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: command terminated with exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def failure_status(message: str, reason: str = "InternalError", code: int = 500) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


@dataclass(frozen=True)
class StreamOptions:
    """Which channels the client asked for (the ``stdin``/``stdout``/``stderr``/``tty`` query parameters)."""

    stdin: bool = False
    stdout: bool = False
    stderr: bool = False
    tty: bool = False


Send = Callable[[bytes], Awaitable[None]]


class ChannelSession:
    """One exec or attach over an accepted WebSocket: inbound stdin and resizes, outbound stdout/stderr.

    ``send`` writes one binary message; ``feed`` is called with every inbound message. Output on a channel the
    client did not ask for is dropped (with a TTY, stderr goes to stdout, as one terminal carries both).
    """

    def __init__(self, send: Send, options: StreamOptions) -> None:
        self._send = send
        self.options = options
        self.stdin: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.size: tuple[int, int] | None = None
        self._stdin_closed = False
        self._lock = asyncio.Lock()
        if not options.stdin:
            self.close_stdin()  # a command reading stdin gets its end at once, as from /dev/null

    async def open(self) -> None:
        channel = STDOUT if self.options.stdout else STDERR if self.options.stderr and not self.options.tty \
            else ERROR
        await self._write(channel, b"")

    def feed(self, message: bytes) -> None:
        parsed = parse(message)
        if parsed is None:
            return
        channel, data = parsed
        if channel == STDIN and self.options.stdin and not self._stdin_closed:
            if data:
                self.stdin.put_nowait(data)
        elif channel == RESIZE:
            with contextlib.suppress(orjson.JSONDecodeError, TypeError, ValueError):
                size = orjson.loads(data)
                self.size = (int(size["Width"]), int(size["Height"]))
        elif channel == CLOSE and data[:1] == bytes((STDIN,)):
            self.close_stdin()

    def close_stdin(self) -> None:
        """The client's input ended (close signal, or the connection went away)."""
        if not self._stdin_closed:
            self._stdin_closed = True
            self.stdin.put_nowait(None)

    async def stdout(self, data: bytes) -> None:
        if data and self.options.stdout:
            await self._write(STDOUT, data)

    async def stderr(self, data: bytes) -> None:
        if not data:
            return
        if self.options.tty:
            await self.stdout(data)
        elif self.options.stderr:
            await self._write(STDERR, data)

    async def status(self, status: dict[str, Any]) -> None:
        await self._write(ERROR, orjson.dumps(status))

    async def _write(self, channel: int, data: bytes) -> None:
        async with self._lock:
            await self._send(frame(channel, data))
