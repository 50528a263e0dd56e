"""Tenants: the boundary between the customers one deployment serves.

A caller's tenant comes from its credential (an API key's record, or the OAuth claim the
deployment names). Everything the platform keeps for a caller is bound to its **owner**: the
principal id alone when it has no tenant (the stored formats of a deployment without tenants),
``tenant:<tenant>/<principal id>`` when it has one. Sessions, tasks, idempotency markers,
subscriptions, server-to-client requests, cancel flags, notification topics and usage counters
are all keyed or checked by the owner, so a handle of tenant A is a stranger's handle to tenant B,
even under the same principal name. No principal id may start with ``tenant:`` (API keys are
refused at mint and at use; OAuth principals start with ``oauth:``): an owner without a tenant
can never spell one with a tenant.
"""

from __future__ import annotations

import re

TENANT_OWNER_PREFIX = "tenant:"
"""Owners of tenant callers start with it; no principal id may (see the module docstring)."""
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
TENANT_SYNTAX = "1-64 characters: letters, digits, '.', '_' or '-', starting with a letter or digit"


class InvalidTenant(ValueError):
    """A tenant name outside :data:`TENANT_SYNTAX`."""


def is_tenant(value: object) -> bool:
    return isinstance(value, str) and _TENANT.fullmatch(value) is not None


def require_tenant(value: object) -> str:
    """``value`` as a tenant name, or :class:`InvalidTenant` naming the rule."""
    if not is_tenant(value):
        raise InvalidTenant(f"a tenant must be {TENANT_SYNTAX}, got {value!r}")
    assert isinstance(value, str)
    return value


def owner_of(principal_id: str, tenant: str | None) -> str:
    """The owner everything of this caller is bound to: the principal id, or its tenant's name
    and the id (the tenant is checked: it is what keeps the spelling unambiguous)."""
    if tenant is None:
        return principal_id
    return f"{TENANT_OWNER_PREFIX}{require_tenant(tenant)}/{principal_id}"


def tenant_of(owner: str) -> str | None:
    """The tenant an owner (:func:`owner_of`) belongs to; None for an owner without one."""
    if not owner.startswith(TENANT_OWNER_PREFIX):
        return None
    tenant, _, _ = owner[len(TENANT_OWNER_PREFIX) :].partition("/")
    return tenant


def tenant_usage_subject(tenant: str) -> str:
    """Whose usage item holds a whole tenant's counters: ``tenant:<tenant>`` (no ``/``, so never
    one of its principals' owners)."""
    return f"{TENANT_OWNER_PREFIX}{require_tenant(tenant)}"


def reserved_principal_id(principal_id: str) -> bool:
    """True for an id that could pass for a tenant caller's owner: never a principal's."""
    return principal_id.startswith(TENANT_OWNER_PREFIX)
