"""Audit trail from the session table's DynamoDB stream (SPEC A2-A5).

``processor`` ties the steps per record: the change (``records``), its ``diff``, one audit record,
and for a TTL expiry the side effects in ``expiry``; ``trail`` is what reading a session's trail
back returns. They are written against ``ports``: reading the stream's records and images, the
audit table and the session table's remains are adapters (``mcp_platform.adapters.dynamodb``:
``stream_images``, ``audit_writer``, ``audit_trail``, ``session_remains``), wired by
``mcp_platform.bootstrap.audit``.

Nothing is imported here: the endpoint reads the trail without loading the stream side.
"""
