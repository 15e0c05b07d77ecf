"""The floor of ``bench/api_bench.py``'s creates/s: the same uvicorn server (same TLS certificate, settings and
event loop) whose one ASGI endpoint reads the request body, decodes it and answers 201 with a ConfigMap-sized
JSON object. No routing, authentication, validation, storage or listeners: what any Python space server on
this stack pays per request before doing anything.

    python bench/create_floor.py --listen 127.0.0.1:PORT --data-dir DIR   (DIR: a hub's data dir, for its PKI)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apiserver.server.endpoint import prepare_endpoint

ANSWER_FIELDS = {"kind": "ConfigMap", "apiVersion": "v1", "data": {"k": "v"}}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    meta = orjson.loads(body)["metadata"] if scope["method"] == "POST" else {"name": "probe"}
    answer = orjson.dumps({**ANSWER_FIELDS, "metadata": {
        "name": meta["name"], "namespace": "default", "uid": "00000000-0000-0000-0000-000000000000",
        "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z"}})
    await send({"type": "http.response.start", "status": 201 if scope["method"] == "POST" else 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]})
    await send({"type": "http.response.body", "body": answer})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    prepare_endpoint(args.data_dir, args.listen, False).server(app).run()


if __name__ == "__main__":
    main()
