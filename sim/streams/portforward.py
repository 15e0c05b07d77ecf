"""``pods/portforward``: kubelet's port-forward protocol over SPDY/3.1, tunnelled in a WebSocket.

For every local connection kubectl opens two SPDY streams with the headers ``streamtype`` (``error`` then
``data``), ``port`` and ``requestid``; this side replies to each (SYN_REPLY) and, once it has both of a request,
connects the data stream to the pod's port: the :mod:`sim.streams.httpd` responder answering
``pod=<name> cluster=<cluster> port=<port>``, on the ports the pod's containers declare (80 when they declare
none). A port nothing listens on gets kubelet's message on the error stream. When the client half-closes the
data stream (or resets it) the connection ends: both streams are half-closed from here.

PING frames are answered; SETTINGS, WINDOW_UPDATE and HEADERS are taken and ignored (kubectl's SPDY library does
no flow control, so neither does this side); GOAWAY ends the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from sim.streams import spdy
from sim.streams.httpd import serve_http
from sim.streams.socket import Socket
from sim.streams.targets import Obj, declared_ports, pod_name, sandbox_id

PROTOCOL = "SPDY/3.1+portforward.k8s.io"
CHUNK = 32 * 1024
log = logging.getLogger(__name__)


@dataclass
class _Stream:
    stream_id: int
    kind: str
    port: int
    inbound: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    sent_fin: bool = False
    received_fin: bool = False
    reset: bool = False


def unreachable(pod: Obj, port: int) -> str:
    """kubelet's (containerd's) error when nothing listens on the port in the pod's network namespace."""
    sandbox = sandbox_id(pod)
    return (f"error forwarding port {port} to pod {sandbox}, uid : failed to execute portforward in network namespace "
            f'"/var/run/netns/cni-{sandbox[:8]}-{sandbox[8:12]}-{sandbox[12:16]}-{sandbox[16:20]}-{sandbox[20:32]}": '
            f'failed to connect to localhost:{port} inside namespace "{sandbox}", IPv4: dial tcp4 127.0.0.1:{port}: '
            f"connect: connection refused IPv6 dial tcp6 [::1]:{port}: connect: connection refused ")


class PortForwardSession:
    def __init__(self, socket: Socket, cluster: str, pod: Obj) -> None:
        self.socket = socket
        self.cluster = cluster
        self.pod = pod
        self.framer = spdy.Framer()
        self.streams: dict[int, _Stream] = {}
        self.pairs: dict[str, dict[str, _Stream]] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.done = asyncio.Event()
        self._lock = asyncio.Lock()

    async def send(self, *frames: spdy.Frame) -> None:
        async with self._lock:  # header blocks must go out in the order they were compressed
            await self.socket.send(b"".join(self.framer.encode(f) for f in frames))

    async def feed(self, data: bytes) -> None:
        try:
            frames = self.framer.feed(data)
        except spdy.SpdyError as exc:
            log.info("port-forward to %s/%s: %s", self.cluster, pod_name(self.pod), exc)
            await self.send(spdy.GoAway(0, 1))
            self.done.set()
            return
        for frame in frames:
            await self._handle(frame)

    async def _handle(self, frame: spdy.Frame) -> None:
        if isinstance(frame, spdy.SynStream):
            await self._open(frame)
        elif isinstance(frame, spdy.Data):
            stream = self.streams.get(frame.stream_id)
            if stream is not None:
                if frame.data:
                    stream.inbound.put_nowait(frame.data)
                if frame.fin and not stream.received_fin:
                    stream.received_fin = True
                    stream.inbound.put_nowait(None)
                    if stream.sent_fin:
                        del self.streams[stream.stream_id]
        elif isinstance(frame, spdy.RstStream):
            stream = self.streams.pop(frame.stream_id, None)
            if stream is not None:
                stream.reset = True
                stream.inbound.put_nowait(None)
        elif isinstance(frame, spdy.Ping):
            await self.send(frame)
        elif isinstance(frame, spdy.GoAway):
            self.done.set()

    async def _open(self, frame: spdy.SynStream) -> None:
        kind, port_text, request = frame.header("streamtype"), frame.header("port"), frame.header("requestid")
        port = int(port_text) if port_text.isdigit() else 0
        if kind not in ("error", "data") or not 0 < port < 65536 or frame.stream_id in self.streams:
            await self.send(spdy.RstStream(frame.stream_id, spdy.PROTOCOL_ERROR))
            return
        stream = _Stream(frame.stream_id, kind, port)
        self.streams[frame.stream_id] = stream
        if frame.fin:
            stream.received_fin = True
            stream.inbound.put_nowait(None)
        await self.send(spdy.SynReply(frame.stream_id))
        # Clients too old to send request ids pair streams by their ids (error n, data n + 2), as kubelet does.
        key = request or str(frame.stream_id - (2 if kind == "data" else 0))
        pair = self.pairs.setdefault(key, {})
        if kind in pair:
            await self.send(spdy.RstStream(frame.stream_id, spdy.PROTOCOL_ERROR))
            return
        pair[kind] = stream
        if len(pair) == 2:
            del self.pairs[key]
            task = asyncio.create_task(self._forward(pair["data"], pair["error"]), name=f"port-forward-{key}")
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _write(self, stream: _Stream, data: bytes) -> None:
        for start in range(0, len(data), CHUNK):
            if stream.reset or self.socket.closed:
                return
            await self.send(spdy.Data(stream.stream_id, data[start:start + CHUNK]))

    async def _finish(self, *streams: _Stream) -> None:
        for stream in streams:
            if not stream.reset and not stream.sent_fin:
                stream.sent_fin = True
                await self.send(spdy.Data(stream.stream_id, b"", spdy.FLAG_FIN))
            if stream.received_fin:
                self.streams.pop(stream.stream_id, None)

    async def _forward(self, data: _Stream, error: _Stream) -> None:
        try:
            if data.port not in declared_ports(self.pod):
                await self._write(error, unreachable(self.pod, data.port).encode())
                return
            body = f"pod={pod_name(self.pod)} cluster={self.cluster} port={data.port}\n".encode()
            await serve_http(data.inbound.get, lambda chunk: self._write(data, chunk), body)
        finally:
            with contextlib.suppress(Exception):
                await self._finish(data, error)

    async def run(self) -> None:
        """Until the client says goodbye (GOAWAY) or breaks the protocol."""
        try:
            await self.done.wait()
        finally:
            for task in list(self.tasks):
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
