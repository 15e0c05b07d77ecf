"""The hub's end of the pod tunnels (docs/sync-protocol.md, "The tunnel"): one per connected syncer, and the
API the hub's own features use to reach a cluster's pods through it.

:class:`TunnelRegistry` keeps this process's live tunnel per SyncTarget (a newer one replaces an older one)
and relays requests over it: :meth:`TunnelRegistry.request` for HTTP (the response streams back chunk by
chunk, its status, headers and body as the cluster sent them) and :meth:`TunnelRegistry.websocket` for
exec, attach and port-forward (messages relayed one by one with their type, close codes included), without
understanding either. Every request is checked against ``kubeclient.tunnel.rules`` before it leaves, and the
syncer checks it again. With several hub processes a tunnel is connected to one of them; the others answer
503 for that cluster. Knows nothing of HTTP frameworks (``routes`` adapts Starlette's WebSocket).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from apimachinery.errors import StatusError
from kubeclient.tunnel import rules
from kubeclient.tunnel.frames import VERSION, Kind
from kubeclient.tunnel.mux import Session, Transport
from kubeclient.tunnel.stream import Closed, Message, Stream, StreamReset, failure

log = logging.getLogger(__name__)
RESPONSE_TIMEOUT = 30.0  # seconds for the cluster's response (its status line) to come back through a tunnel
REPLACED = 4000  # the close code of a tunnel a newer one of the same cluster replaces
DELETED = 4004  # the close code of a tunnel whose SyncTarget was deleted (its credential is revoked with it)
STOPPING = 1012  # WebSocket "service restart": the hub process is stopping


def _status_error(status: dict[str, Any]) -> StatusError:
    return StatusError(int(status.get("code") or 503), str(status.get("reason") or "ServiceUnavailable"),
                       str(status.get("message") or "the tunnel request failed"))


def _header_pairs(headers: Any) -> list[list[str]]:
    return [[name, value] for name, value in rules.forwarded(headers, rules.REQUEST_HEADERS)]


class _Relayed:
    """A stream through the tunnel, abandoned (``aclose``, or leaving ``async with``) when its caller is done:
    the syncer then stops reading from the cluster."""

    _stream: Stream

    async def aclose(self) -> None:
        self._stream.reset()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


class TunnelResponse(_Relayed):
    """An HTTP response from the cluster: ``status``, ``headers``, then the body's chunks as they arrive
    (``async for chunk in response``; a StatusError if the tunnel fails midway). Close it (``aclose``, or
    ``async with``) to abandon the rest: the syncer then stops reading from the cluster."""

    def __init__(self, stream: Stream, head: dict[str, Any]) -> None:
        self._stream = stream
        self._read = False  # the body was read to its end
        self.status = int(head.get("status") or 0)
        self.headers: list[tuple[str, str]] = [(str(k), str(v)) for k, v in head.get("headers") or []]

    @property
    def buffered(self) -> int:
        """Body bytes arrived from the syncer that have not been read (at most the stream's window)."""
        return self._stream.buffered

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        while not self._read:
            try:
                frame = await self._stream.next()
            except StreamReset as exc:
                raise _status_error(exc.status) from None
            if frame.kind == Kind.DATA:
                yield frame.payload
            elif frame.kind == Kind.END:
                self._read = True



class TunnelSocket(_Relayed):
    """A WebSocket to the cluster (exec, attach, port-forward) with the ``subprotocol`` the cluster chose.

    ``receive()`` gives each :class:`Message` (binary or text, in order) and finally :class:`Closed` with the
    cluster's close code (1011 if the tunnel failed); ``send()`` waits while the cluster side is behind (a
    StatusError once the stream is gone); ``close(code, reason)`` closes the cluster's WebSocket with that
    code. Leaving ``async with`` abandons whatever is still open."""

    def __init__(self, stream: Stream, subprotocol: str | None) -> None:
        self._stream = stream
        self._closed: Closed | None = None  # how it ended, once it has
        self.subprotocol = subprotocol

    @property
    def buffered(self) -> int:
        return self._stream.buffered

    async def receive(self) -> Message | Closed:
        if self._closed is not None:
            return self._closed
        try:
            item = await self._stream.receive_message()
        except StreamReset as exc:
            self._closed = Closed(1011, str(exc.status.get("message") or "the tunnel failed")[:123])
            return self._closed
        if isinstance(item, Closed):
            self._closed = item
            self._stream.end(item.code, item.reason)  # the close handshake's answer
        return item

    async def send(self, message: Message) -> None:
        try:
            await self._stream.send_message(message.data, message.text)
        except StreamReset as exc:
            raise _status_error(exc.status) from None

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self._stream.end(code, reason)



@dataclass
class _Tunnel:
    session: Session
    since: str


class TunnelRegistry:
    """This hub process's tunnels, by SyncTarget name."""

    def __init__(self, ping_interval: float) -> None:
        self.ping_interval = ping_interval
        self._tunnels: dict[str, _Tunnel] = {}

    async def serve(self, target: str, transport: Transport) -> None:
        """Run ``target``'s tunnel over an accepted WebSocket until it ends (replacing an older one)."""
        # The syncer pings (every interval we give it in HELLO); this side answers and watches for silence.
        session = Session(transport, ping_interval=self.ping_interval, name=f'tunnel of cluster "{target}"',
                          pings=False)
        entry = _Tunnel(session, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        older = self._tunnels.get(target)
        self._tunnels[target] = entry
        if older is not None:
            older.session.close(REPLACED, "replaced by a newer tunnel")
        session.say_hello({"version": VERSION, "pingInterval": self.ping_interval})
        log.info("cluster %s: tunnel connected%s", target, " (replacing the previous one)" if older else "")
        try:
            why = await session.run()
        finally:
            if self._tunnels.get(target) is entry:
                del self._tunnels[target]
        log.info("cluster %s: tunnel %s", target, why)

    def sync_target_changed(self, name: str, target: dict[str, Any] | None) -> None:
        """An inventory listener: a deleted cluster's tunnel ends (its syncer's reconnection is refused)."""
        entry = self._tunnels.get(name)
        if target is None and entry is not None:
            entry.session.close(DELETED, "sync target deleted")

    def location_changed(self, _name: str, _location: dict[str, Any] | None) -> None:
        return

    def close(self) -> None:
        """The process is stopping: end every tunnel (syncers reconnect, to another process or this one)."""
        for entry in self._tunnels.values():
            entry.session.close(STOPPING, "hub stopping")

    def connected(self, target: str) -> bool:
        return target in self._tunnels

    def status(self, target: str) -> dict[str, Any]:
        """What ``GET /syncer/v1/targets/<target>/tunnel/status`` shows: this process's view of the tunnel."""
        entry = self._tunnels.get(target)
        if entry is None:
            return {"syncTarget": target, "connected": False}
        session = entry.session
        return {"syncTarget": target, "connected": True, "connectedSince": entry.since,
                "streamsOpen": len(session.streams), "streamsOpened": session.opened,
                "bytesToCluster": session.bytes_sent, "bytesFromCluster": session.bytes_received,
                "bufferedBytes": session.buffered}

    def _session(self, target: str) -> Session:
        entry = self._tunnels.get(target)
        if entry is None or entry.session.ended:
            raise StatusError(503, "ServiceUnavailable", f'cluster "{target}" has no tunnel connected')
        return entry.session

    async def request(self, target: str, method: str, path: str, query: str = "",
                      headers: Sequence[tuple[str, str]] = (), body: bytes = b"", *,
                      timeout: float = RESPONSE_TIMEOUT) -> TunnelResponse:
        """``method path?query`` in cluster ``target``: its response once the status line is back.

        ``query`` is the raw (percent-encoded) query string; of ``headers`` only Accept, Content-Type and
        User-Agent are sent. StatusError 403 when the rules do not allow the request, 413 for a body over
        ``rules.MAX_REQUEST_BODY``, 503 without a tunnel (or when it fails), 504 after ``timeout`` seconds, or
        the syncer's refusal; an error the cluster answers is a response like any other."""
        rules.check(method, path, query, upgrade=False)
        if len(body) > rules.MAX_REQUEST_BODY:
            raise StatusError(413, "RequestEntityTooLarge", f"a tunnel request body is at most "
                                                            f"{rules.MAX_REQUEST_BODY} bytes")
        stream = self._session(target).open({"method": method, "path": path, "query": query,
                                             "headers": _header_pairs(headers), "upgrade": None})
        try:
            await stream.send_body(body)
            stream.end()
            head = await self._response(target, stream, timeout)
        except StreamReset as exc:  # the tunnel failed while the body went out
            raise _status_error(exc.status) from None
        except BaseException:
            stream.reset()
            raise
        return TunnelResponse(stream, head)

    async def websocket(self, target: str, path: str, query: str = "", subprotocols: Sequence[str] = (),
                        headers: Sequence[tuple[str, str]] = (), *,
                        timeout: float = RESPONSE_TIMEOUT) -> TunnelSocket:
        """A WebSocket to ``path?query`` in cluster ``target`` offering ``subprotocols`` (exec, attach,
        portforward), once the cluster has accepted it. Errors as for :meth:`request`; a cluster refusing
        the upgrade is the syncer's refusal, with the cluster's status code."""
        rules.check("GET", path, query, upgrade=True)
        offered = rules.check_subprotocols(subprotocols)
        stream = self._session(target).open({"method": "GET", "path": path, "query": query,
                                             "headers": _header_pairs(headers), "upgrade": offered})
        try:
            head = await self._response(target, stream, timeout)
        except BaseException:
            stream.reset()
            raise
        chosen = head.get("subprotocol")
        return TunnelSocket(stream, chosen if isinstance(chosen, str) else None)

    @staticmethod
    async def _response(target: str, stream: Stream, timeout: float) -> dict[str, Any]:
        try:
            return await stream.response(timeout)
        except StreamReset as exc:
            raise _status_error(exc.status) from None
        except TimeoutError:
            raise _status_error(failure(504, "Timeout", f'cluster "{target}" did not answer through its tunnel '
                                                        f"within {timeout:.0f}s")) from None
