"""The tasks extension (``io.modelcontextprotocol/tasks``): long tool calls as durable tasks.

* ``protocol.tasks``: the task and its wire shapes;
* :mod:`.ports`: what the use cases need of the task items (``adapters.dynamodb.tasks``, every
  transition conditional) and of the queue;
* :mod:`.budget`: what one task item may hold, part by part;
* :mod:`.service`: the endpoint's side: create on tools/call, ``tasks/get|update|cancel``;
* :mod:`mcp_platform.application.task_worker`: the task worker function's side: run the call, record
  its outcome (beside the tool-call runner it drives, above this package).

Nothing here loads unless the stack deploys the task worker (``MCP_TASK_QUEUE_URL`` is set).
"""
