"""Network faults made by the tests themselves: network namespaces joined by veth pairs, whose links a test
takes down and up (a partition, not a killed process), and a TCP relay that delays and drops connections
(this kernel has no ``netem``).

:class:`Netns` needs root (``ip netns``, ``ip link``); :func:`require_netns` skips, saying why, where that is
not permitted. :class:`TcpRelay` runs an asyncio server in a thread of the test process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import pytest


def _ip(*args: str, netns: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", *(["netns", "exec", netns, "ip"] if netns else []), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def require_netns() -> None:
    """Skip the test, saying why, unless this process may make network namespaces."""
    if shutil.which("ip") is None:
        pytest.skip("no `ip` command (iproute2) to make network namespaces with")
    probe = f"shprobe{os.getpid()}"
    made = _ip("netns", "add", probe)
    if made.returncode != 0:
        pytest.skip(f"cannot make network namespaces here (needs root): {made.stderr.strip()}")
    _ip("netns", "del", probe)


@dataclass
class Link:
    """One veth pair: ``host`` (this namespace, address ``host_ip``) to the namespace's end (``ns_ip``)."""

    host: str
    host_ip: str
    ns_ip: str

    def down(self) -> None:
        _check(_ip("link", "set", self.host, "down"))

    def up(self) -> None:
        _check(_ip("link", "set", self.host, "up"))


@dataclass
class Netns:
    """A network namespace with its own loopback and one veth link per name in ``links`` (each its own /30 in
    10.``octet``.<n>.0), deleted with its links on exit."""

    links: tuple[str, ...]
    name: str = field(default_factory=lambda: f"sh{os.getpid() % 100000}")
    octet: int = field(default_factory=lambda: 200 + os.getpid() % 50)
    made: dict[str, Link] = field(default_factory=dict)

    def __enter__(self) -> Self:
        require_netns()
        _ip("netns", "del", self.name)  # one left by an earlier run of this process id that was killed
        _check(_ip("netns", "add", self.name))
        try:
            _check(_ip("link", "set", "lo", "up", netns=self.name))
            for index, purpose in enumerate(self.links, start=1):
                host, inside = f"{self.name}h{index}", f"{self.name}n{index}"
                host_ip, ns_ip = f"10.{self.octet}.{index}.1", f"10.{self.octet}.{index}.2"
                _check(_ip("link", "add", host, "type", "veth", "peer", "name", inside))
                _check(_ip("link", "set", inside, "netns", self.name))
                _check(_ip("addr", "add", f"{host_ip}/30", "dev", host))
                _check(_ip("addr", "add", f"{ns_ip}/30", "dev", inside, netns=self.name))
                _check(_ip("link", "set", host, "up"))
                _check(_ip("link", "set", inside, "up", netns=self.name))
                self.made[purpose] = Link(host, host_ip, ns_ip)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        _ip("netns", "del", self.name)  # takes the namespace's ends of the veth pairs, and so both ends, with it

    def link(self, purpose: str) -> Link:
        return self.made[purpose]

    def command(self, *cmd: str) -> list[str]:
        """``cmd`` run inside the namespace (``ip netns exec`` execs it: the process is ``cmd`` itself)."""
        return ["ip", "netns", "exec", self.name, *cmd]


def _check(proc: subprocess.CompletedProcess[str]) -> None:
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(proc.args)} failed: {proc.stderr.strip()}")


@dataclass
class TcpRelay:
    """Accepts on ``listen_host`` (a free port) and relays each connection to ``target``; every chunk is held
    ``latency`` seconds each way (as a slow link would), and ``drop_fraction`` of the connections are cut at a
    random moment of their first ten seconds (as a lossy link breaks a connection). ``dropped`` counts them."""

    listen_host: str
    target: tuple[str, int]
    latency: float = 0.0
    drop_fraction: float = 0.0
    seed: int = 32
    port: int = 0
    accepted: int = 0
    dropped: int = 0
    _loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    _thread: threading.Thread | None = None
    _server: asyncio.Server | None = None
    _live: set[asyncio.StreamWriter] = field(default_factory=set)

    def __enter__(self) -> Self:
        self._random = random.Random(self.seed)
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._relay, self.listen_host, self.port))
            self.port = int(self._server.sockets[0].getsockname()[1])
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="tcp-relay", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("the relay did not start")
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        async def shut() -> None:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop.close()

    def cut_all(self) -> None:
        """Cut every connection open now (from the test's thread)."""
        def cut() -> None:
            for writer in list(self._live):
                self.dropped += 1
                writer.transport.abort()

        self._loop.call_soon_threadsafe(cut)

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.close()
            return
        self._live.add(client_writer)
        pumps = [asyncio.create_task(self._pump(client_reader, upstream_writer)),
                 asyncio.create_task(self._pump(upstream_reader, client_writer))]
        if self._random.random() < self.drop_fraction:
            self.dropped += 1
            pumps.append(asyncio.create_task(asyncio.sleep(self._random.uniform(0.0, 10.0))))
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._live.discard(client_writer)
            for task in pumps:
                task.cancel()
            for writer in (client_writer, upstream_writer):
                writer.transport.abort()  # a cut link: no orderly close

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Copy ``reader`` to ``writer``, each chunk delivered ``latency`` after it arrived, in order."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                if not chunk:
                    with contextlib.suppress(OSError):
                        writer.write_eof()
                    return
                await asyncio.sleep(max(0.0, due - loop.time()))
                writer.write(chunk)
                await writer.drain()

        delivery = asyncio.create_task(deliver())
        try:
            while True:
                chunk = await reader.read(65536)
                await queue.put((loop.time() + self.latency, chunk))
                if not chunk:
                    break
            await delivery
        finally:
            delivery.cancel()
