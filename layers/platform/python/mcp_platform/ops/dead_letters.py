"""Reading and replaying the platform's dead-letter queues, each through the path that failed.

Five queues, three message shapes:

- ``producer`` (K2): a tool-call event Kinesis refused after every retry; the body is the record's
  data, its partition key and error code are message attributes. Replayed onto the stream.
- ``ingest`` and ``audit`` (A1): Lambda's on-failure record of a stream mapping, a *pointer* to a
  shard and a sequence range, not the records. Replayed by reading that range from the stream
  (while it still retains it) and running each record through the function's own handler logic.
- ``expiry`` (A4): a ``session.expired`` event the audit function could not publish. Republished.
- ``tasks``: a task message the worker could not handle at all. Sent back to the task queue.

Every replay is idempotent where it lands: ingest dedupes by event id, audit records are keyed by
sequence number, a task runs from its item's state, so replaying twice never duplicates a record.
A message is deleted only after its replay succeeded; a failed replay leaves it where it was.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_platform.config import EnvVars
from mcp_platform.ops.lambda_records import SourceKind, dynamodb_event_record

if TYPE_CHECKING:
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

KINDS = ("producer", "ingest", "audit", "expiry", "tasks")
# Each DLQ's URL by the variable the functions and the stack's OperationsEnvironment name it.
QUEUE_VARIABLES = {
    "producer": EnvVars.PRODUCER_DLQ_URL,
    "ingest": EnvVars.INGEST_DLQ_URL,
    "audit": EnvVars.AUDIT_DLQ_URL,
    "expiry": EnvVars.EXPIRY_EVENTS_DLQ_URL,
    "tasks": EnvVars.TASK_DLQ_URL,
}


def queue_urls(env: Mapping[str, str]) -> dict[str, str]:
    """Each kind's DLQ URL in ``env`` ("" where it names none)."""
    return {kind: env.get(name, "") for kind, name in QUEUE_VARIABLES.items()}


RECEIVE_BATCH = 10
REPLAY_VISIBILITY_S = 60  # a message being replayed is hidden this long; deleted once replayed


class ReplayFailed(RuntimeError):
    """A message could not be replayed; it stays in its queue."""


@dataclass(frozen=True)
class DeadLetter:
    """One DLQ message, decoded into what an operator needs to decide about it."""

    kind: str
    message_id: str
    receipt_handle: str
    body: str
    attributes: dict[str, str]
    summary: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def decode(cls, kind: str, message: MessageTypeDef) -> DeadLetter:
        attributes = {
            name: value.get("StringValue", "") for name, value in message.get("MessageAttributes", {}).items()
        }
        letter = cls(kind, message["MessageId"], message["ReceiptHandle"], message["Body"], attributes)
        return cls(kind, letter.message_id, letter.receipt_handle, letter.body, attributes, summarise(letter))

    def json_body(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def summarise(letter: DeadLetter) -> dict[str, Any]:
    """Which call, session and error a message is about (what `show` prints)."""
    body = letter.json_body()
    if letter.kind == "producer":
        event = body if isinstance(body, dict) else {}
        return {
            "call": event.get("event_id"),
            "session": event.get("session_id"),
            "tool": event.get("tool"),
            "trace": event.get("trace_id"),  # the call's trace (python -m local.trace, Logs Insights)
            "error": letter.attributes.get("ErrorCode"),
            "attempts": letter.attributes.get("Attempts"),
        }
    if letter.kind in ("ingest", "audit"):
        pointer = _pointer(letter)
        context = body.get("requestContext", {}) if isinstance(body, dict) else {}
        response = body.get("responseContext", {}) if isinstance(body, dict) else {}
        return {
            "shard": pointer.get("shardId"),
            "sequences": f"{pointer.get('startSequenceNumber')}..{pointer.get('endSequenceNumber')}",
            "records": pointer.get("batchSize"),
            "error": response.get("functionError") or context.get("condition"),
            "first_arrival": pointer.get("approximateArrivalOfFirstRecord"),
        }
    if letter.kind == "expiry":
        event = body.get("event", {}) if isinstance(body, dict) else {}
        return {"session": event.get("session_id"), "error": body.get("error_code") if isinstance(body, dict) else None}
    task = body if isinstance(body, dict) else {}
    return {"task": task.get("taskId") or task.get("task_id"), "body_bytes": len(letter.body.encode())}


def _pointer(letter: DeadLetter) -> dict[str, Any]:
    body = letter.json_body()
    if not isinstance(body, dict):
        raise ReplayFailed(f"message {letter.message_id} is not an on-failure record")
    kind = SourceKind.KINESIS if letter.kind == "ingest" else SourceKind.DYNAMODB
    pointer = body.get(kind.batch_info_key)
    if not isinstance(pointer, dict):
        raise ReplayFailed(f"message {letter.message_id} has no {kind.batch_info_key}")
    return pointer


@dataclass
class DeadLetterQueues:
    """The platform's DLQs and what a replay needs, with its AWS clients injected."""

    sqs: SQSClient
    queue_urls: dict[str, str]  # kind -> DLQ URL
    kinesis: KinesisClient | None = None  # the producer, expiry and ingest replays need it
    streams: DynamoDBStreamsClient | None = None  # the audit replay needs it
    stream_name: str = ""
    task_queue_url: str = ""
    ingest_record: Callable[[str], Any] | None = None  # EventIngestor.ingest_record (base64 data)
    audit_record: Callable[[dict[str, Any]], Any] | None = None  # AuditProcessor.process (Lambda shape)

    def url(self, kind: str) -> str:
        url = self.queue_urls.get(kind, "")
        if not url:
            raise ReplayFailed(f"no {kind} dead-letter queue is configured")
        return url

    def depth(self, kind: str) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.url(kind), AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])

    def peek(self, kind: str, limit: int) -> list[DeadLetter]:
        """Up to ``limit`` messages, left visible for the next reader (visibility 0)."""
        return [DeadLetter.decode(kind, message) for message in self._receive(kind, visibility_s=0, limit=limit)]

    def replay(self, kind: str, *, message_id: str | None = None, limit: int = 100) -> list[tuple[str, str]]:
        """Replays up to ``limit`` messages (or the one named); (message id, outcome) each. Every
        message is received once (hidden while this runs); those not replayed are made visible again."""
        outcomes: list[tuple[str, str]] = []
        keep: list[DeadLetter] = []
        for message in self._receive(kind, visibility_s=REPLAY_VISIBILITY_S, limit=limit):
            letter = DeadLetter.decode(kind, message)
            if message_id is not None and letter.message_id != message_id:
                keep.append(letter)
                continue
            try:
                self._replay(letter)
            except Exception as exc:  # reported per message; the message stays in its queue
                keep.append(letter)
                outcomes.append((letter.message_id, f"failed, kept: {exc}"))
                continue
            self.sqs.delete_message(QueueUrl=self.url(kind), ReceiptHandle=letter.receipt_handle)
            outcomes.append((letter.message_id, "replayed"))
        for letter in keep:
            self.sqs.change_message_visibility(
                QueueUrl=self.url(kind), ReceiptHandle=letter.receipt_handle, VisibilityTimeout=0
            )
        return outcomes

    def purge(self, kind: str) -> None:
        self.sqs.purge_queue(QueueUrl=self.url(kind))

    def _receive(self, kind: str, *, visibility_s: int, limit: int) -> Iterator[MessageTypeDef]:
        """Each message at most once: a peek (visibility 0) would otherwise see the same ones again."""
        seen: set[str] = set()
        while len(seen) < limit:
            batch = self.sqs.receive_message(
                QueueUrl=self.url(kind),
                MaxNumberOfMessages=min(RECEIVE_BATCH, limit - len(seen)),
                MessageAttributeNames=["All"],
                VisibilityTimeout=visibility_s,
                WaitTimeSeconds=0,
            ).get("Messages", [])
            fresh = [message for message in batch if message["MessageId"] not in seen]
            if not fresh:
                return
            seen.update(message["MessageId"] for message in fresh)
            yield from fresh

    def _replay(self, letter: DeadLetter) -> None:
        if letter.kind == "producer":
            data = letter.body.encode("utf-8")
            if letter.attributes.get("DataEncoding") == "base64":
                data = base64.b64decode(letter.body)
            stream = letter.attributes.get("Stream") or self.stream_name
            self._kinesis().put_record(StreamName=stream, Data=data, PartitionKey=letter.attributes["PartitionKey"])
        elif letter.kind == "expiry":
            body = letter.json_body()
            event = body["event"]
            data = json.dumps(event, separators=(",", ":")).encode("utf-8")
            self._kinesis().put_record(
                StreamName=body.get("stream") or self.stream_name, Data=data, PartitionKey=str(event["session_id"])
            )
        elif letter.kind == "tasks":
            self.sqs.send_message(QueueUrl=self.task_queue_url, MessageBody=letter.body)
        elif letter.kind == "ingest":
            if self.ingest_record is None:
                raise ReplayFailed("ingest replay needs the ingest handler's logic")
            for record in self._kinesis_range(_pointer(letter)):
                self.ingest_record(base64.b64encode(bytes(record["Data"])).decode("ascii"))
        elif letter.kind == "audit":
            if self.audit_record is None:
                raise ReplayFailed("audit replay needs the audit handler's logic")
            pointer = _pointer(letter)
            for record in self._table_stream_range(pointer):
                self.audit_record(dynamodb_event_record(record, stream_arn=pointer["streamArn"]))
        else:
            raise ReplayFailed(f"unknown dead-letter kind {letter.kind!r}")

    def _kinesis(self) -> KinesisClient:
        if self.kinesis is None:
            raise ReplayFailed("this replay needs a Kinesis client")
        return self.kinesis

    def _streams(self) -> DynamoDBStreamsClient:
        if self.streams is None:
            raise ReplayFailed("this replay needs a DynamoDB Streams client")
        return self.streams

    def _kinesis_range(self, pointer: dict[str, Any]) -> Iterator[Mapping[str, Any]]:
        kinesis = self._kinesis()
        iterator = kinesis.get_shard_iterator(
            StreamName=pointer["streamArn"].rsplit("/", 1)[-1],  # arn:...:stream/<name>
            ShardId=pointer["shardId"],
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            StartingSequenceNumber=pointer["startSequenceNumber"],
        )["ShardIterator"]
        yield from _range(lambda it: kinesis.get_records(ShardIterator=it), iterator, pointer, "SequenceNumber")

    def _table_stream_range(self, pointer: dict[str, Any]) -> Iterator[Mapping[str, Any]]:
        streams = self._streams()
        iterator = streams.get_shard_iterator(
            StreamArn=pointer["streamArn"],
            ShardId=pointer["shardId"],
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            SequenceNumber=pointer["startSequenceNumber"],
        )["ShardIterator"]
        yield from _range(
            lambda it: streams.get_records(ShardIterator=it), iterator, pointer, ("dynamodb", "SequenceNumber")
        )


def _range(
    get_records: Callable[[str], Mapping[str, Any]], iterator: str | None, pointer: dict[str, Any], key: Any
) -> list[Mapping[str, Any]]:
    """The records from the pointer's start through its end sequence number (inclusive)."""
    end = int(pointer["endSequenceNumber"])
    found: list[Mapping[str, Any]] = []
    while iterator:
        page = get_records(iterator)
        records = page.get("Records", [])
        for record in records:
            sequence = int(record[key[0]][key[1]] if isinstance(key, tuple) else record[key])
            if sequence > end:
                return found
            found.append(record)
        if not records:
            break
        iterator = page.get("NextShardIterator")
    if not found:
        raise ReplayFailed("the stream no longer holds these records (past its retention)")
    return found
