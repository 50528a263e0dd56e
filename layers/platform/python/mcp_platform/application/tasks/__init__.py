"""The tasks extension (``io.modelcontextprotocol/tasks``): long tool calls as durable tasks.

* :mod:`.model`: the task and its wire shapes;
* :mod:`.store`: task items in the session table, every transition conditional;
* :mod:`.service`: the endpoint's side: create on tools/call, ``tasks/get|update|cancel``;
* :mod:`.worker`: the task worker function's side: run the call, record its outcome.

Nothing here loads unless the stack deploys the task worker (``MCP_TASK_QUEUE_URL`` is set).
"""
