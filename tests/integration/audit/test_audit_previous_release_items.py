"""Two releases at once, the audit side: the items a previous release wrote (recorded by its own
code, tests/support/stored_formats.py) go through today's audit function as the table stream
delivers them, written and then expired by TTL, and every change is audited (the session side is
tests/integration/sessions/test_previous_release_formats.py)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from tests.integration.audit.audit_function import AuditFunction
from tests.support.session_stream import as_ttl_removal, audit_records
from tests.support.stored_formats import items_now, recorded_releases


@pytest.mark.parametrize("path", recorded_releases(), ids=lambda path: path.stem)
def test_todays_audit_records_a_previous_releases_session_items(audit_function: AuditFunction, path: Any) -> None:
    recorded = json.loads(path.read_text())
    tables = audit_function.tables
    items = items_now(recorded, time.time())
    for item in items:
        tables.put(item)
    written = tables.drain()
    assert audit_function.invoke(written) == {"batchItemFailures": []}
    handle = recorded["application_session"]
    for session_id in (handle, recorded["transport_session"]):
        stored = {item[ts.SK]["S"] for item in items if item[ts.PK]["S"] == ts.session_pk(session_id)}
        audited = {record["item"] for record in audit_records(tables.audit_items(session_id))}
        assert audited == stored, session_id
    # The application session expires by TTL: its removal (the old image) is audited too, and its
    # summary event published.
    tables.delete(ts.session_pk(handle), ts.METADATA_SK)
    removed = [as_ttl_removal(record) for record in tables.drain()]
    assert audit_function.invoke(removed) == {"batchItemFailures": []}
    assert [key for key, _ in audit_function.published_events()] == [handle]
