"""Interactive tools: a call (or a prompt, or a resource read) asks its client for input.

One API for both protocol eras (:mod:`mcp_platform.protocol.interactive`, behind
``ToolContext``'s ``elicit``, ``sample``, ``list_roots`` and ``ask_all``). How the question
travels depends on the request:

* 2026-07-28 (:mod:`.rounds`): the request is answered with an ``InputRequiredResult``; the
  client retries with ``inputResponses`` and the echoed ``requestState``, which any instance
  verifies (:mod:`.state`, keys from :mod:`.keys`) and consumes once (the vault of :mod:`.ports`).
* 2025 revisions (:mod:`.outbound`): a JSON-RPC request on the call's SSE stream; the client's
  response POST reaches whichever instance and is delivered through the table (the reply
  items of :mod:`.ports`).

:class:`~.services.InteractiveServices` is built at start and loads each side on first use.
Nothing is imported here: the package is loaded at start.
"""
