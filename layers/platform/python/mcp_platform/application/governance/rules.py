"""Rate limits and quotas as an operator writes them, parsed and validated in one place.

Both are JSON objects, rule key -> ``"<N>/<period>"`` (CDK context ``rate_limits`` / ``quotas``,
``MCP_RATE_LIMITS`` / ``MCP_QUOTAS`` for ``make dev``)::

    {"principal": "60/minute", "client": "600/minute", "tool:search": "10/minute",
     "register": "10/hour", "token": "30/minute"}
    {"principal": "1000/day"}

Synth (``stacks/config.py``) and the endpoint's start read them with the same functions, so a
rule the stack accepts is a rule the endpoint enforces; a bad one raises :class:`RuleError`
naming it. Pure: nothing here reads the environment or talks to AWS.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

RATE_PERIODS = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400}
QUOTA_PERIODS = ("day", "month")
# Who a rule counts: the caller (every MCP request), or what it reaches (a tool's calls; the
# facade's registrations and token requests). A tenant is one more caller attribute.
CALLER_KEYS = ("principal", "tenant", "client")
FACADE_KEYS = ("register", "token")
TOOL_KEY_PREFIX = "tool:"
QUOTA_KEYS = ("principal", "tenant")
MAX_LIMIT = 1_000_000_000
# MCP tool names (2025-11-25): 1-128 characters of ASCII letters, digits, '_', '-' and '.'.
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_VALUE = re.compile(r"\s*([0-9]{1,10})\s*/\s*([a-z]+)\s*")


class RuleError(ValueError):
    """A rate limit or quota that cannot be enforced; the message names the rule."""


@dataclass(frozen=True)
class RateRule:
    """At most ``limit`` admissions per ``period`` (a window aligned to the epoch) for each
    value of ``key``: each principal, each client, each tenant; a ``tool:<name>`` rule counts
    that tool's calls from every caller together, ``register``/``token`` the facade's."""

    key: str
    limit: int
    period: str

    @property
    def seconds(self) -> int:
        return RATE_PERIODS[self.period]

    @property
    def tool(self) -> str | None:
        """The tool a ``tool:<name>`` rule counts, else None."""
        return self.key.removeprefix(TOOL_KEY_PREFIX) if self.key.startswith(TOOL_KEY_PREFIX) else None

    def __str__(self) -> str:
        return f"{self.key}: {self.limit}/{self.period}"


@dataclass(frozen=True)
class QuotaRule:
    """At most ``limit`` tool calls per calendar ``period`` (UTC day or month) for each value of
    ``key``, counted from the usage the ingest function keeps."""

    key: str
    limit: int
    period: str

    def __str__(self) -> str:
        return f"{self.key}: {self.limit}/{self.period}"


def parse_rate_limits(source: str | Mapping[str, object] | None, *, name: str = "rate_limits") -> tuple[RateRule, ...]:
    """The rules of a ``rate_limits`` object (JSON text or a mapping); empty or None: none."""
    rules = []
    for key, value in _entries(source, name).items():
        if not (key in CALLER_KEYS or key in FACADE_KEYS or _is_tool_key(key)):
            allowed = ", ".join((*CALLER_KEYS, f"{TOOL_KEY_PREFIX}<tool name>", *FACADE_KEYS))
            raise RuleError(f"{name}: unknown rule {key!r} (allowed: {allowed})")
        limit, period = _limit(name, key, value, tuple(RATE_PERIODS))
        rules.append(RateRule(key=key, limit=limit, period=period))
    return tuple(rules)


def parse_quotas(source: str | Mapping[str, object] | None, *, name: str = "quotas") -> tuple[QuotaRule, ...]:
    """The rules of a ``quotas`` object; a key may carry one quota per period, so a key names
    its period when both are set: ``{"principal": "1000/day", "principal:month": "20000/month"}``."""
    rules = []
    for key, value in _entries(source, name).items():
        subject, _, suffix = key.partition(":")
        if subject not in QUOTA_KEYS or suffix not in ("", *QUOTA_PERIODS):
            allowed = ", ".join(f"{k}[:day|:month]" for k in QUOTA_KEYS)
            raise RuleError(f"{name}: unknown quota {key!r} (allowed: {allowed})")
        limit, period = _limit(name, key, value, QUOTA_PERIODS)
        if suffix and suffix != period:
            raise RuleError(f"{name}: quota {key!r} names {suffix} but counts per {period}")
        rules.append(QuotaRule(key=subject, limit=limit, period=period))
    periods = [(rule.key, rule.period) for rule in rules]
    if len(set(periods)) != len(periods):
        raise RuleError(f"{name}: two quotas for the same key and period")
    return tuple(rules)


def _is_tool_key(key: str) -> bool:
    return key.startswith(TOOL_KEY_PREFIX) and TOOL_NAME.fullmatch(key[len(TOOL_KEY_PREFIX) :]) is not None


def _entries(source: str | Mapping[str, object] | None, name: str) -> Mapping[str, object]:
    if source is None:
        return {}
    if isinstance(source, str):
        if not source.strip():
            return {}
        try:
            source = json.loads(source)
        except json.JSONDecodeError as exc:
            raise RuleError(f"{name} must be a JSON object: {exc.msg}") from exc
    if not isinstance(source, Mapping):
        raise RuleError(f'{name} must be a JSON object of rule -> "<N>/<period>"')
    return source


def _limit(name: str, key: str, value: object, periods: tuple[str, ...]) -> tuple[int, str]:
    matched = _VALUE.fullmatch(value) if isinstance(value, str) else None
    if matched is None or matched.group(2) not in periods:
        raise RuleError(f'{name}: rule {key!r} must be "<N>/<{"|".join(periods)}>", got {value!r}')
    limit = int(matched.group(1))
    if not 1 <= limit <= MAX_LIMIT:
        raise RuleError(f"{name}: rule {key!r} must allow between 1 and {MAX_LIMIT}, got {limit}")
    return limit, matched.group(2)


def require_enforceable(rate_rules: tuple[RateRule, ...], *, facade: bool, name: str = "rate_limits") -> None:
    """Refuses rules a deployment could parse but never apply (RuleError naming them): the
    facade's without the facade. ``name``: what the rate limits are called where they were set."""
    for rule in rate_rules:
        if rule.key in FACADE_KEYS and not facade:
            raise RuleError(f"{name}: rule {rule.key!r} limits the OAuth facade, which is not deployed")
