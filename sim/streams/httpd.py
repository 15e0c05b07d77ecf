"""The tiny HTTP/1.1 server behind every forwarded port of a simulated pod.

Any request gets ``200 OK`` with a fixed ``text/plain`` body, except ``GET /bytes/<n>``, which gets ``n``
bytes (at most ``MAX_BYTES``: a download to measure a forward's throughput with); a connection carries
requests one after another (keep-alive, as HTTP/1.1 has it by default, until ``Connection: close`` or an
HTTP/1.0 request without ``keep-alive``). Request bodies are read by ``Content-Length`` and ignored; a
malformed or chunked request gets ``400`` and the connection ends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

Read = Callable[[], Awaitable[bytes | None]]
Write = Callable[[bytes], Awaitable[None]]
MAX_HEAD = 64 * 1024
MAX_BYTES = 256 * 1024 * 1024
_PATTERN = bytes(range(256)) * 4096  # 1 MiB, repeated for downloads


def _head(status: str, length: int, keep_alive: bool) -> bytes:
    lines = [f"HTTP/1.1 {status}", "Content-Type: text/plain; charset=utf-8", f"Content-Length: {length}"]
    if not keep_alive:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _response(status: str, body: bytes, keep_alive: bool, head_only: bool = False) -> bytes:
    return _head(status, len(body), keep_alive) + (b"" if head_only else body)


async def serve_http(read: Read, write: Write, body: bytes) -> None:
    """Answer requests read from ``read`` (None: the client is done sending) until the connection ends."""
    buffer = b""
    while True:
        while b"\r\n\r\n" not in buffer:
            if len(buffer) > MAX_HEAD:
                await write(_response("431 Request Header Fields Too Large", b"", keep_alive=False))
                return
            chunk = await read()
            if chunk is None:
                return
            buffer += chunk
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        parts = request_line.split(" ")
        headers = {}
        for line in header_lines:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or "chunked" in headers.get("transfer-encoding", ""):
            await write(_response("400 Bad Request", b"bad request\n", keep_alive=False))
            return
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            length = -1
        if length < 0:
            await write(_response("400 Bad Request", b"bad request\n", keep_alive=False))
            return
        while len(buffer) < length:
            chunk = await read()
            if chunk is None:
                return
            buffer += chunk
        buffer = buffer[length:]
        connection = headers.get("connection", "").lower()
        keep_alive = "close" not in connection if parts[2] == "HTTP/1.1" else "keep-alive" in connection
        download = _download_size(parts[1])
        if download is None:
            await write(_response("200 OK", body, keep_alive, head_only=parts[0] == "HEAD"))
        else:
            await write(_head("200 OK", download, keep_alive))
            for start in range(0, download, len(_PATTERN)):
                await write(_PATTERN[:min(len(_PATTERN), download - start)])
        if not keep_alive:
            return


def _download_size(target: str) -> int | None:
    """``n`` of ``/bytes/<n>`` when 0 ≤ n ≤ MAX_BYTES; None for any other request target."""
    prefix, _, size = target.partition("/bytes/")
    if prefix or not size.isdigit() or int(size) > MAX_BYTES:
        return None
    return int(size)
