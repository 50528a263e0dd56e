"""Audit trail from the session table's DynamoDB stream (SPEC A2-A5).

``diff`` compares stream images, ``writer`` stores audit records and session summaries,
``expiry`` runs the TTL-expiry side effects, ``processor`` ties them per record, ``trail``
reads a session's trail back, ``factory`` builds them from :class:`~mcp_platform.config.Settings`.
"""

from mcp_platform.audit.diff import ImageDiff, diff_images
from mcp_platform.audit.expiry import EventPublisher, ExpiryOutcome, SessionExpiryHandler
from mcp_platform.audit.processor import AuditProcessor, RecordOutcome
from mcp_platform.audit.publisher import KinesisEventPublisher
from mcp_platform.audit.records import MalformedStreamRecord, StreamChange
from mcp_platform.audit.trail import AuditTrail, InvalidCursor, TrailPage
from mcp_platform.audit.writer import AuditWriter

__all__ = [
    "AuditProcessor",
    "AuditTrail",
    "AuditWriter",
    "EventPublisher",
    "ExpiryOutcome",
    "ImageDiff",
    "InvalidCursor",
    "KinesisEventPublisher",
    "MalformedStreamRecord",
    "RecordOutcome",
    "SessionExpiryHandler",
    "StreamChange",
    "TrailPage",
    "diff_images",
]
