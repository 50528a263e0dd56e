"""Audit trail from the session table's DynamoDB stream (SPEC A2-A5).

``diff`` compares stream images, ``writer`` stores audit records and session summaries,
``expiry`` runs the TTL-expiry side effects, ``processor`` ties them per record, ``trail``
reads a session's trail back, ``factory`` builds them from :class:`~mcp_platform.config.Settings`.

Nothing is imported here: the endpoint reads the trail (``trail``) without loading the stream
side (``diff`` needs boto3's deserializer, and boto3 costs ~0.2 s of cold start).
"""
