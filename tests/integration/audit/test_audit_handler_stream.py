"""A2/A4/A5 end to end: real moto stream records through the audit function's handler."""

from __future__ import annotations

import copy
import json

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from mcp_platform.adapters.dynamodb import table_schema as ts
from tests.integration.audit.audit_function import AuditFunction, lambda_context
from tests.support.session_stream import as_ttl_removal, audit_records, metadata_item, tool_marker, tool_record

CALL = ("2026-11-29T10:10:00Z", "c1")


def _sequence_numbers(items: list[dict]) -> list[str]:
    return sorted(record["sequence_number"] for record in audit_records(items))


def test_a2_batch_delivered_twice_leaves_one_audit_record_each(audit_function: AuditFunction) -> None:
    # Given a batch of session changes mixed with non-session items (API key, usage, dedupe)
    tables = audit_function.tables
    tables.put(metadata_item("s1"))
    tables.update(ts.session_pk("s1"), ts.METADATA_SK, "SET version = version + :one", {":one": {"N": "1"}})
    tables.put(tool_record("s1", *CALL))
    for pk in ("apikey#abc", "usage#p1", "event#e1"):
        tables.put({"pk": {"S": pk}, "sk": {"S": "metadata"}})
    records = tables.drain()
    # When the same batch is delivered twice
    first = audit_function.invoke(copy.deepcopy(records))
    second = audit_function.invoke(copy.deepcopy(records))
    # Then neither delivery fails, each session record is audited exactly once, others never
    assert first == second == {"batchItemFailures": []}
    session_seqs = sorted(r["dynamodb"]["SequenceNumber"] for r in records[:3])
    assert _sequence_numbers(tables.audit_items()) == session_seqs


def test_a5_poison_record_in_100_is_the_only_failure(audit_function: AuditFunction) -> None:
    # Given 100 real INSERT records, one of which carries an undecodable image
    tables = audit_function.tables
    for i in range(100):
        tables.put(metadata_item(f"s{i:03d}"))
    records = tables.drain()
    assert len(records) == 100
    poison = records[37]
    poison["dynamodb"]["NewImage"]["status"] = {"XX": "not a DynamoDB type"}
    # When the batch is processed
    response = audit_function.invoke(records)
    # Then exactly that record is reported (by SequenceNumber) and the 99 others are audited
    assert response == {"batchItemFailures": [{"itemIdentifier": poison["dynamodb"]["SequenceNumber"]}]}
    audited = _sequence_numbers(tables.audit_items())
    assert len(audited) == 99 and poison["dynamodb"]["SequenceNumber"] not in audited


def test_a5_batch_of_only_poison_fails_the_invocation(audit_function: AuditFunction) -> None:
    # Given a batch holding a single malformed record (no Keys)
    audit_function.tables.put(metadata_item("s1"))
    (record,) = audit_function.tables.drain()
    del record["dynamodb"]["Keys"]
    # When it is processed
    # Then the invocation fails as a whole, so the event source mapping bisects/retries it to the DLQ
    with pytest.raises(BatchProcessingError):
        audit_function.invoke([record])


def _ttl_and_explicit_removals(audit_function: AuditFunction) -> list[dict]:
    """s1 removed by TTL, s2 deleted explicitly; both held one tool record and its marker."""
    tables = audit_function.tables
    for session_id in ("s1", "s2"):
        tables.put(metadata_item(session_id))
        tables.put(tool_record(session_id, *CALL))
        tables.put(tool_marker(session_id, *CALL))
        tables.delete(ts.session_pk(session_id), ts.METADATA_SK)
    records = tables.drain()
    removals = [r for r in records if r["eventName"] == "REMOVE"]
    records[records.index(removals[0])] = as_ttl_removal(removals[0])
    return records


def test_a4_ttl_remove_and_explicit_delete_take_different_paths(audit_function: AuditFunction) -> None:
    # Given the TTL removal of s1's metadata and an explicit delete of s2's, in one batch
    records = _ttl_and_explicit_removals(audit_function)
    tables = audit_function.tables
    # When the batch is processed
    assert audit_function.invoke(records) == {"batchItemFailures": []}
    # Then both removals are audited, told apart by who removed them
    trail = {sid: audit_records(tables.audit_items(sid)) for sid in ("s1", "s2")}
    (s1_remove,) = [r for r in trail["s1"] if r["event_name"] == "REMOVE"]
    (s2_remove,) = [r for r in trail["s2"] if r["event_name"] == "REMOVE"]
    assert s1_remove["ttl_expiry"] is True
    assert s1_remove["who"]["principal_id"] == "dynamodb.amazonaws.com"
    assert s2_remove["ttl_expiry"] is False
    # and only the TTL path revoked the held items, wrote a summary and emitted an event
    assert tables.session_items("s1") == [] and len(tables.session_items("s2")) == 2
    assert any(i["sk"]["S"] == ts.AUDIT_SUMMARY_SK for i in tables.audit_items("s1"))
    assert not any(i["sk"]["S"] == ts.AUDIT_SUMMARY_SK for i in tables.audit_items("s2"))
    ((key, data),) = audit_function.published_events()
    assert key == "s1" and json.loads(data)["type"] == "session.expired"


def test_a4_ttl_batch_redelivered_and_cleanup_records_are_harmless(audit_function: AuditFunction) -> None:
    # Given a processed batch with a TTL expiry
    records = _ttl_and_explicit_removals(audit_function)
    tables = audit_function.tables
    audit_function.invoke(copy.deepcopy(records))
    audited_once = _sequence_numbers(tables.audit_items())
    # When the batch is redelivered, then the stream records of the cleanup deletes arrive
    assert audit_function.invoke(copy.deepcopy(records)) == {"batchItemFailures": []}
    cleanup = tables.drain()
    assert audit_function.invoke(cleanup) == {"batchItemFailures": []}
    # Then no second event or summary exists, and the cleanup deletes are audited as plain deletes
    assert len(audit_function.published_events()) == 1
    summaries = [i for i in tables.audit_items("s1") if i["sk"]["S"] == ts.AUDIT_SUMMARY_SK]
    assert len(summaries) == 1
    assert [r["eventName"] for r in cleanup] == ["REMOVE", "REMOVE"]
    assert _sequence_numbers(tables.audit_items()) == sorted(
        audited_once + [r["dynamodb"]["SequenceNumber"] for r in cleanup]
    )
    assert sum(1 for r in audit_records(tables.audit_items()) if r["ttl_expiry"]) == 1


def test_with_span_export_on_a_traced_change_is_audited_in_a_span_of_its_trace(
    audit_function: AuditFunction, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given span export on, and a session change a traced request made (its trace on the item)
    import importlib

    from mcp_platform.config import EnvVars
    from tests.support.otlp_receiver import otlp_receiver

    trace_id, request_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    with otlp_receiver() as receiver:
        monkeypatch.setenv(EnvVars.OTLP_TRACES_ENDPOINT, receiver.url)
        handler = importlib.reload(audit_function.handler)
        audit_function.tables.put(
            metadata_item("s1", extra={ts.TRACE_ID: {"S": trace_id}, ts.SPAN_ID: {"S": request_span}})
        )
        # When the stream record is audited
        response = handler.lambda_handler({"Records": audit_function.tables.drain()}, lambda_context())
        assert response == {"batchItemFailures": []}
        # Then its audit was exported as a span of the request's trace, a child of its span
        (span,) = receiver.spans()
    assert (span["name"], span["traceId"], span["parentSpanId"]) == ("audit", trace_id, request_span)
    attributes = {a["key"]: a["value"]["stringValue"] for a in span["attributes"]}
    assert attributes["mcp.audit.action"] == "audited"
