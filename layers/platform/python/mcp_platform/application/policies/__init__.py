"""Per-tool policies: who may call which tool with which arguments, read which resource, get which
prompt (:mod:`.access`), decided by a policy engine behind :mod:`.ports`."""
