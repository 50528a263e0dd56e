"""Audit function: session-table stream records -> audit trail and TTL-expiry side effects."""
