"""Minimal valid media for the content fixtures (a few bytes each, base64-encoded)."""

from __future__ import annotations

import base64
import struct

# A 1x1 transparent PNG.
PNG_BASE64 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


def _silent_wav(samples: int = 8, rate: int = 8000) -> bytes:
    """A mono 8-bit PCM WAV of ``samples`` silent samples (128 is silence in 8-bit PCM)."""
    data = bytes([128]) * samples
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)  # PCM, mono, byte rate, block align, bits
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


WAV_BASE64 = base64.b64encode(_silent_wav()).decode()
