"""K2 "zero silent loss", for any fault pattern: after a flush, returned or raised, each record is
in exactly one place (accepted by Kinesis, taken by the DLQ, or back in the buffer, in its
original order), and a flush that returns has left nothing behind.

The faults are drawn per PutRecords call: every record accepted, some refused (a retryable or a
terminal code), the whole call refused (throttled, or a validation error), a connection error,
or an exception the producer does not expect. The DLQ takes everything, refuses some records
(``DeadLetterError``), or fails in a way it does not translate.
"""

from __future__ import annotations

import contextlib
from typing import Any

from botocore.exceptions import ClientError, EndpointConnectionError
from events_fakes import FakeSqs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_platform.adapters.kinesis.producer import EventProducer
from mcp_platform.adapters.sqs.dead_letters import DeadLetterError, DeadLetterQueue

CALL_FAULTS = ("none", "some", "throttled", "invalid", "connection", "crash")


class ScriptedKinesis:
    """Answers each PutRecords call as the drawn fault says; records which keys it accepted."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.accepted: list[str] = []

    def put_records(self, Records: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        fault = self.data.draw(st.sampled_from(CALL_FAULTS), label="call fault")
        if fault == "crash":
            raise RuntimeError("unexpected failure inside the client")
        if fault == "connection":
            raise EndpointConnectionError(endpoint_url="https://kinesis.local")
        if fault in ("throttled", "invalid"):
            code = "ProvisionedThroughputExceededException" if fault == "throttled" else "ValidationException"
            raise ClientError({"Error": {"Code": code, "Message": "refused"}}, "PutRecords")
        results = []
        for record in Records:
            refused = fault == "some" and self.data.draw(st.booleans(), label="record refused")
            if refused:
                code = self.data.draw(st.sampled_from(["ProvisionedThroughputExceededException", "InternalFailure"]))
                results.append({"ErrorCode": code, "ErrorMessage": "injected"})
            else:
                self.accepted.append(record["PartitionKey"])
                results.append({"SequenceNumber": str(len(self.accepted)), "ShardId": "shardId-000000000000"})
        return {"FailedRecordCount": sum("ErrorCode" in r for r in results), "Records": results}


class ScriptedSqs(FakeSqs):
    """Takes, refuses (per message) or crashes on each SendMessageBatch as drawn."""

    def __init__(self, data: st.DataObject) -> None:
        super().__init__()
        self.data = data
        self.taken: list[str] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        fault = self.data.draw(st.sampled_from(["none", "some", "crash"]), label="dlq fault")
        if fault == "crash":
            raise RuntimeError("DLQ client bug")
        successful, failed = [], []
        for entry in Entries:
            if fault == "some" and self.data.draw(st.booleans(), label="message refused"):
                failed.append({"Id": entry["Id"], "Code": "KMS.Throttling", "Message": "no"})
            else:
                self.taken.append(entry["MessageAttributes"]["PartitionKey"]["StringValue"])
                successful.append({"Id": entry["Id"]})
        return {"Successful": successful, "Failed": failed}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    count=st.integers(min_value=1, max_value=12),
    per_call=st.integers(min_value=1, max_value=5),
    attempts=st.integers(min_value=1, max_value=3),
)
def test_k2_every_record_ends_in_exactly_one_place(
    data: st.DataObject, count: int, per_call: int, attempts: int
) -> None:
    # Given records buffered in order, and a Kinesis and a DLQ that fail as drawn
    kinesis, sqs = ScriptedKinesis(data), ScriptedSqs(data)
    dlq = DeadLetterQueue(sqs, "https://sqs.local/dlq", sleep=lambda s: None)
    producer = EventProducer(
        kinesis, "events", dlq, sleep=lambda s: None, max_attempts=attempts, max_records_per_call=per_call
    )
    keys = [f"k{i:02d}" for i in range(count)]
    for key in keys:
        producer.add_record(b"{}", key)
    # When flushed
    result = None
    # An unexpected client error, or the DLQ's refusal, propagates: what it left is in the buffer.
    with contextlib.suppress(RuntimeError, DeadLetterError):
        result = producer.flush()
    restored = [record.partition_key for record in producer._buffer]
    # Then each record is in exactly one place, and what is back in the buffer keeps its order
    assert sorted(kinesis.accepted + sqs.taken + restored) == keys
    assert restored == sorted(restored)
    # And a flush that returned reports it all and leaves nothing behind
    if result is not None:
        assert restored == []
        assert (result.sent, result.dead_lettered) == (len(kinesis.accepted), len(sqs.taken))
