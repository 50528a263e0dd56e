"""Zero-latency fakes of the Kinesis and SQS clients for producer unit tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

# (call index, position in the call, PartitionKey) -> error code or None
FailureRule = Callable[[int, int, dict[str, Any]], str | None]


class FakeKinesis:
    def __init__(self, rule: FailureRule | None = None, call_error: str | None = None) -> None:
        self.rule = rule
        self.call_error = call_error
        self.calls: list[list[dict[str, Any]]] = []
        self.accepted: list[dict[str, Any]] = []

    def put_records(self, Records: list[dict[str, Any]], **target: Any) -> dict[str, Any]:
        self.calls.append(list(Records))
        if self.call_error:
            raise ClientError({"Error": {"Code": self.call_error, "Message": "boom"}}, "PutRecords")
        results = []
        for pos, record in enumerate(Records):
            code = self.rule(len(self.calls) - 1, pos, record) if self.rule else None
            if code:
                results.append({"ErrorCode": code, "ErrorMessage": f"{code} injected"})
            else:
                self.accepted.append(record)
                results.append({"SequenceNumber": str(len(self.accepted)), "ShardId": "shardId-000000000000"})
        failed = sum(1 for r in results if "ErrorCode" in r)
        return {"FailedRecordCount": failed, "Records": results}


class FakeSqs:
    def __init__(self, fail_ids: bool = False) -> None:
        self.fail_ids = fail_ids
        self.calls: list[list[dict[str, Any]]] = []

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m for call in self.calls for m in call] if not self.fail_ids else []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(list(Entries))
        if self.fail_ids:
            failed = [{"Id": e["Id"], "Code": "KMS.Throttling", "Message": "no", "SenderFault": False} for e in Entries]
            return {"Successful": [], "Failed": failed}
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}
