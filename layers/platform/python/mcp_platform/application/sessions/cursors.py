"""The opaque cursor of a page of a session's tool-call records: the sort key of the last record
of the page, which the next page starts after. Every store issues and reads the same cursor."""

from __future__ import annotations

import base64
import binascii
import json

from mcp_platform.application.sessions.errors import InvalidCursor
from mcp_platform.application.sessions.model import TOOL_RECORD_PREFIX


def encode_cursor(sk: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"sk": sk}).encode()).decode()


def decode_cursor(cursor: str) -> str:
    """The record sort key ``cursor`` names; InvalidCursor for what no store issued."""
    try:
        sk = json.loads(base64.urlsafe_b64decode(cursor.encode()))["sk"]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise InvalidCursor("malformed cursor") from exc
    # A record key is about 70 characters; a longer one was never issued (and real DynamoDB
    # refuses sort keys over 1,024 bytes in ExclusiveStartKey).
    if not isinstance(sk, str) or not sk.startswith(TOOL_RECORD_PREFIX) or len(sk) > 256:
        raise InvalidCursor("malformed cursor")
    return sk
