"""Unmasking WebSocket frames in C for the servers' wsproto (uvicorn's ``ws="wsproto"``).

A client masks every frame it sends (RFC 6455 §5.3) and the server XORs the mask back out. wsproto does that in
Python, about 1 µs per KiB: relaying a port-forward's download, which reaches the hub from the syncer's tunnel
as client frames, that was 15 % of the hub's CPU (py-spy, ``bench/debug_bench.py``). The ``websockets``
package, installed with uvicorn's standard extras, has the same XOR as a C function (13 x faster on 32 KiB);
:func:`install` puts a masker using it where wsproto's decoder looks its masker up. wsproto is kept because it
accepts the subprotocol names kubectl offers for port-forward (README, "Dependencies").
"""

from __future__ import annotations

import logging

import wsproto.frame_protocol

log = logging.getLogger(__name__)

try:
    from websockets.speedups import apply_mask
except ImportError:  # no C build for this platform: wsproto's own masker stays
    apply_mask = None


class CMasker:
    """wsproto's ``XorMaskerSimple`` contract: ``process`` unmasks the next piece of one frame's payload (a
    frame arrives in pieces, so the key is rotated by what each piece consumed)."""

    def __init__(self, masking_key: bytes | bytearray) -> None:
        self._key = bytes(masking_key)

    def process(self, data: bytearray) -> bytearray:
        if not data:
            return bytearray(data)
        assert apply_mask is not None
        out = bytearray(apply_mask(data, self._key))
        turn = len(data) % 4
        self._key = self._key[turn:] + self._key[:turn]
        return out


def install() -> bool:
    """Use :class:`CMasker` in wsproto's frame decoder (and encoder, for a client); whether it is in use."""
    if apply_mask is None or not hasattr(wsproto.frame_protocol, "XorMaskerSimple"):
        return False
    wsproto.frame_protocol.XorMaskerSimple = CMasker  # type: ignore[misc,assignment]
    return True
