"""The session store (D1-D10, X3-X5): one DynamoDB table, optionally fronted by DAX.

Construct it once per process and inject the client(s)::

    store = SessionStore.from_settings(settings)            # DAX client iff DAX_ENDPOINT is set
    store = SessionStore("table", client=moto_client)        # tests
    store.gateway.calls                                      # AWS calls made, per operation

Which reads may be served by DAX, and which must use ConsistentRead (X4)
-------------------------------------------------------------------------
With DAX on, every item operation goes through the DAX client (X3), so writes are
write-through and the item cache stays coherent with our own writes. Writes that bypass
DAX (other functions, the console) can leave an item stale for up to the item-cache TTL
(5 min, X2); query results can be stale for the query-cache TTL (1 min). Hence:

Who writes what a cached read may return (X6): session metadata items are written only by the
endpoint and the task worker, both through DAX when it is on. Ingest writes tool-call records,
usage counters and dedupe markers, never a metadata item (it only ConditionChecks it); audit
deletes the items a session held after DynamoDB's TTL removed its metadata, and a cached metadata
item of such a session already carries a ttl in the past, so every reader confirms it
consistently before answering. The staleness a cached read can show is therefore bounded by
writes made outside the platform (the console, a script) and by the item-cache TTL.

May be served by DAX (eventually consistent, tolerates <= 5 min staleness):
  * ``get_session(..., consistent=False)``: the owner never changes and the ttl only grows
    while a session is alive, so a cached *live* answer is a safe answer for auth and for
    display. A cached "missing" or "expired" answer may be stale (a negative-cache entry, an
    extension written elsewhere), so that case is confirmed with one consistent read.
  * the 2025 ``Mcp-Session-Id`` check on every request (``http/legacy.py``), and
    ``load_for_tool_call(..., consistent=False)`` for a read-only tool declared
    ``consistency="eventual"`` (X6): both only decide "exists, is the caller's, is alive";
  * ``list_tool_calls(..., consistent=False)``: records are immutable; a page may miss a
    record committed in the last minute.
  * ``expiring_within``: a GSI query (GSIs are never strongly consistent); a maintenance
    signal, re-checked against the clock.

Must use ConsistentRead (bypasses the cache; DAX passes it through to DynamoDB):
  * the read of every optimistic-locking update (``update_metadata``, D2): a stale version
    would only produce a guaranteed conflict;
  * ``load_for_tool_call``: the version it returns is the commit's expected version, the
    expiry decides whether the call may run, and the marker decides whether it is a replay;
  * ``commit_tool_call`` given an id instead of a held Session, and every read that explains
    a failed condition (is the marker there, is the session gone, which version won);
  * ``get_session(..., consistent=True)`` wherever the caller decides on the latest value
    right after a write (session existence after create/end, D6/X4).
Writes carry their own conditions (alive, version, attribute_not_exists), so the final
decision is always made by DynamoDB on the latest item, whatever any cache says.

Version arithmetic (D2, whole session and per attribute)
---------------------------------------------------------
The metadata item carries two kinds of version:

* ``version`` (D2): one more on every write of the metadata item other than the ttl: appends
  (D3), tool-call commits of every effect, ``update_metadata``, ``end_session``. A write
  conditioned on ``version = :expected`` (``update_metadata``; a read-modify-write run that read
  ``ctx.session``, which may have looked at anything) conflicts with every other write.
* ``attribute_versions[n]``: one more on every committed *change* of ``attributes[n]`` (an
  absent entry is 0). A write of the whole map under ``version = :expected`` (``update_metadata``,
  ``set_attributes``) knows the stored map exactly, so it stores the versions with one more for
  each name whose value it changes (set, changed or removed: ``Session.versions_after``). A
  read-modify-write run that read attributes one by one (``ctx.attribute``) commits under
  ``attribute_versions[n] = seen`` for each attribute it read or writes
  (``attribute_not_exists`` when seen is 0), and for each it changed sets ``attributes[n]`` and
  ``attribute_versions[n] = seen + 1``. It still adds one to ``version`` (a whole-session reader
  must see it) but does not check it: appends and writes to other attributes never make it run
  again; a write to an attribute it read does. After such a commit the held state is exact for
  the attributes it read (value and version together), a lower bound for the rest.
* ttl-only writes (``extend_expiry``, ``slide_expiry``, D7) change neither.

An item written before ``attribute_versions`` was kept has none (``Session.attribute_versions``
is None): its first per-attribute commit falls back to ``version = :expected`` and stores them.
"""

from __future__ import annotations

from mcp_platform.adapters.dynamodb.sessions.lifecycle import LifecycleOps
from mcp_platform.adapters.dynamodb.sessions.tool_calls import ToolCallOps


class SessionStore(LifecycleOps, ToolCallOps):
    """Create/get/append/update/extend/end sessions; record, commit and list tool calls."""
