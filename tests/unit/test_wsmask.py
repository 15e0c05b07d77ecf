"""The servers' C unmasking gives wsproto's own results, however a frame's payload arrives in pieces."""

from __future__ import annotations

import random

import pytest
import wsproto.frame_protocol

from apiserver.server import wsmask

ORIGINAL = wsproto.frame_protocol.XorMaskerSimple


@pytest.mark.skipif(wsmask.apply_mask is None, reason="websockets has no C speedups on this platform")
@pytest.mark.parametrize("seed", range(20))
def test_unmasking_in_pieces_matches_wsproto(seed: int) -> None:
    rng = random.Random(seed)
    key = bytes(rng.randrange(256) for _ in range(4))
    payload = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 70_000)))
    ours, theirs = wsmask.CMasker(key), ORIGINAL(key)
    got, want, start = bytearray(), bytearray(), 0
    while start < len(payload):
        end = min(len(payload), start + rng.choice([1, 2, 3, 5, 4096, 32_768, 65_535]))
        got += ours.process(bytearray(payload[start:end]))
        want += theirs.process(bytearray(payload[start:end]))
        start = end
    assert got == want
    assert ours.process(bytearray()) == bytearray()


@pytest.mark.skipif(wsmask.apply_mask is None, reason="websockets has no C speedups on this platform")
def test_a_frame_masked_by_wsproto_is_read_back_through_the_c_masker() -> None:
    """End to end through wsproto's own encoder (a client masks) and decoder (the server unmasks)."""
    previous = wsproto.frame_protocol.XorMaskerSimple
    try:
        assert wsmask.install()
        client = wsproto.frame_protocol.FrameProtocol(client=True, extensions=[])
        server = wsproto.frame_protocol.FrameProtocol(client=False, extensions=[])
        message = bytes(range(256)) * 300
        wire = client.send_data(message, fin=True)
        server.receive_bytes(wire[:1000])
        server.receive_bytes(wire[1000:])
        frames = list(server.received_frames())
        assert b"".join(bytes(f.payload) for f in frames) == message
    finally:
        wsproto.frame_protocol.XorMaskerSimple = previous
