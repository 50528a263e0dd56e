"""Ingest decoding: anything undecodable is a PoisonRecordError (a batch item failure)."""

from __future__ import annotations

import base64

import pytest

from mcp_platform.application.events.ingest import PoisonRecordError, decode_record


def test_valid_record_decodes_to_the_event(make_event):
    event = make_event()
    assert decode_record(base64.b64encode(event.to_bytes()).decode()) == event


@pytest.mark.parametrize(
    "data",
    [
        "%%% not base64 %%%",
        base64.b64encode(b"{truncated").decode(),
        base64.b64encode(b'{"v": 1, "event_id": "x"}').decode(),
        base64.b64encode(b'{"v": 99}').decode(),
    ],
    ids=["bad-base64", "bad-json", "missing-fields", "future-version"],
)
def test_poison_records_raise_the_typed_error(data):
    with pytest.raises(PoisonRecordError):
        decode_record(data)
