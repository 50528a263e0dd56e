"""Event source mapping semantics for stream sources, as Lambda applies them (pure).

One shard's batch in, handler invocations and on-failure messages out; no AWS calls, so every
rule is unit-tested with fake handlers:

- Success (no ``batchItemFailures``, or an empty/None response): the batch is done.
- Partial failure (ReportBatchItemFailures): records before the lowest reported sequence
  number are done; the rest are retried from there. Each such retry consumes one attempt.
  An empty, null or unknown ``itemIdentifier`` fails the whole batch, as in AWS.
- Function error (the handler raised): with BisectBatchOnFunctionError the batch is split in
  two and each half is retried on its own; splitting consumes no attempt, so a poison record
  is isolated before its attempts run out. A single record (or no bisect) consumes one.
- After ``max_retries`` failed retries, or once a record is older than ``max_record_age_s``,
  the records go to the on-failure destination (as a pointer message) and the shard moves on:
  a poison record never blocks it (A1, A5).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from local.failure_record import RECORD_AGE_EXCEEDED, RETRIES_EXHAUSTED, failure_record
from mcp_platform.ops.lambda_records import SourceKind, arrival_of, sequence_of

logger = logging.getLogger(__name__)
Invoke = Callable[[dict[str, Any]], Any]
DeadLetter = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class MappingConfig:
    kind: SourceKind
    function_arn: str
    stream_arn: str  # what the on-failure message points at
    batch_size: int
    max_retries: int  # -1 = retry until the record expires
    bisect_on_error: bool
    report_batch_item_failures: bool
    max_record_age_s: int  # -1 = no limit


@dataclass
class BatchOutcome:
    invocations: int = 0
    dead_lettered: list[dict[str, Any]] = field(default_factory=list)  # the on-failure messages sent


@dataclass(frozen=True)
class _Failure:
    index: int  # first record to retry
    function_error: str | None  # "Unhandled" when the handler raised


class EventSourceMapping:
    def __init__(
        self, config: MappingConfig, invoke: Invoke, dead_letter: DeadLetter, clock: Callable[[], float] = time.time
    ) -> None:
        self.config = config
        self._invoke = invoke
        self._dead_letter = dead_letter
        self._clock = clock

    def process(self, records: list[dict[str, Any]], shard_id: str) -> BatchOutcome:
        """Delivers one batch until every record succeeded or was dead-lettered.

        Raises only if the on-failure destination refuses a message: the caller must then not
        advance its checkpoint, so nothing is lost.
        """
        outcome = BatchOutcome()
        pending: deque[tuple[list[dict[str, Any]], int]] = deque([(records, 0)])
        while pending:
            segment, attempts = pending.popleft()
            segment = self._expire(segment, shard_id, attempts, outcome)
            if not segment:
                continue
            outcome.invocations += 1
            failure = self._deliver(segment)
            if failure is None:
                continue
            if failure.function_error and self.config.bisect_on_error and len(segment) > 1:
                middle = len(segment) // 2
                pending.appendleft((segment[middle:], attempts))
                pending.appendleft((segment[:middle], attempts))
                continue
            remaining, attempts = segment[failure.index :], attempts + 1
            if 0 <= self.config.max_retries < attempts:
                self._send(remaining, shard_id, RETRIES_EXHAUSTED, attempts, failure.function_error, outcome)
                continue
            pending.appendleft((remaining, attempts))
        return outcome

    def _deliver(self, segment: list[dict[str, Any]]) -> _Failure | None:
        try:
            response = self._invoke({"Records": segment})
        except Exception:
            # The function error is the handler's to explain: log it with its trace, then
            # apply the mapping's retry/bisect rules to the batch.
            logger.warning("%s raised on a batch of %d", self.config.function_arn, len(segment), exc_info=True)
            return _Failure(0, "Unhandled")
        if not self.config.report_batch_item_failures or not isinstance(response, dict):
            return None
        failures = response.get("batchItemFailures") or []
        if not failures:
            return None
        sequences = [sequence_of(self.config.kind, record) for record in segment]
        indexes = []
        for failure in failures:
            identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
            if not identifier or identifier not in sequences:
                logger.warning("invalid itemIdentifier %r: the whole batch counts as failed", identifier)
                return _Failure(0, None)
            indexes.append(sequences.index(identifier))
        return _Failure(min(indexes), None)

    def _expire(
        self, segment: list[dict[str, Any]], shard_id: str, attempts: int, outcome: BatchOutcome
    ) -> list[dict[str, Any]]:
        """Records past MaximumRecordAge go to the destination without another invocation."""
        if self.config.max_record_age_s < 0:
            return segment
        oldest_allowed = self._clock() - self.config.max_record_age_s
        expired = [r for r in segment if arrival_of(self.config.kind, r) < oldest_allowed]
        if expired:
            self._send(expired, shard_id, RECORD_AGE_EXCEEDED, attempts, None, outcome)
        return [r for r in segment if arrival_of(self.config.kind, r) >= oldest_allowed]

    def _send(
        self,
        records: list[dict[str, Any]],
        shard_id: str,
        condition: str,
        attempts: int,
        function_error: str | None,
        outcome: BatchOutcome,
    ) -> None:
        message = failure_record(
            kind=self.config.kind,
            records=records,
            shard_id=shard_id,
            stream_arn=self.config.stream_arn,
            function_arn=self.config.function_arn,
            condition=condition,
            invoke_count=attempts,
            function_error=function_error,
            now=self._clock(),
        )
        self._dead_letter(message)
        outcome.dead_lettered.append(message)
        logger.error(
            "%s: %d record(s) sent to the on-failure destination (%s, sequence %s..%s)",
            self.config.function_arn,
            len(records),
            condition,
            sequence_of(self.config.kind, records[0]),
            sequence_of(self.config.kind, records[-1]),
        )
