"""Admission: a request is counted against every rate limit that applies to it and checked
against its caller's quotas before anything runs or is written.

Rate limits are fixed windows aligned to the epoch (a minute rule's windows start on the minute,
a day rule's at 00:00 UTC), one shared counter per rule, subject and window
(:class:`~mcp_platform.application.governance.ports.RateCounters`). Every rule that applies to a
request is counted in one write, all or none, so a refused request uses up no other rule's
room. DynamoDB decides each count: at most N requests per window are admitted across all
instances together. Two windows meet at their boundary, so any period-long interval that spans
one may see up to 2N; instances whose clocks differ by d may disagree about a window for d.

Quotas are checked from the usage totals ingest keeps (one read, which DAX's item cache may
serve), before the rate limits count, so a call over its quota uses up no rate-limit room. They
lag the calls by the stream's delivery and the cache's item TTL: a caller may go over a quota by
the calls it makes in that time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from mcp_platform.application.auth.base import Principal
from mcp_platform.application.auth.tenants import tenant_usage_subject
from mcp_platform.application.blocking import Blocking
from mcp_platform.application.governance.ports import RateCounters, UsageTotals, WindowHit
from mcp_platform.application.governance.rules import FACADE_KEYS, QuotaRule, RateRule
from mcp_platform.protocol.clock import Clock, iso_utc, month_of, utc_day
from mcp_platform.protocol.jsonrpc import QUOTA_EXCEEDED, RATE_LIMITED, JSONObject, JsonRpcError

TOO_MANY_REQUESTS = 429


class Refused(Exception):
    """Over a rate limit or a quota: answered 429 with ``Retry-After``."""

    retry_after_seconds: int
    rule_name: str
    """The refusing rule as operators wrote it: ``principal``, ``tool:search``, ``quota:principal:day``."""


class RateLimited(Refused):
    def __init__(self, rule: RateRule, retry_after_seconds: int) -> None:
        super().__init__(f"Rate limit reached ({rule}); retry after {retry_after_seconds} s")
        self.rule = rule
        self.rule_name = rule.key
        self.retry_after_seconds = retry_after_seconds


class QuotaExceeded(Refused):
    def __init__(self, rule: QuotaRule, resets_at: float, retry_after_seconds: int) -> None:
        super().__init__(f"Quota used up ({rule}); it resets at {iso_utc(resets_at, 'auto')}")
        self.rule = rule
        self.rule_name = f"quota:{rule.key}:{rule.period}"
        self.resets_at = resets_at
        self.retry_after_seconds = retry_after_seconds


@dataclass(frozen=True)
class Governor:
    """The deployment's rules and where their counts live; built only when a rule is configured
    (no rule: no governor, no AWS call)."""

    rate_rules: tuple[RateRule, ...]
    quota_rules: tuple[QuotaRule, ...]
    counters: RateCounters | None
    usage: UsageTotals | None
    clock: Clock
    blocking: Blocking

    def __post_init__(self) -> None:
        if self.rate_rules and self.counters is None:
            raise ValueError("rate limits need their counters")
        if self.quota_rules and self.usage is None:
            raise ValueError("quotas need the usage totals")

    async def admit(self, caller: Principal, *, tool: str | None) -> None:
        """An MCP request of ``caller`` (``tool``: the tool a tools/call names), or :class:`Refused`."""
        now = self.clock.now()
        hits = [
            WindowHit(rule, subject, _window_start(now, rule))
            for rule in self.rate_rules
            if (subject := _subject(rule, caller, tool)) is not None
        ]
        if tool is not None:  # quotas count tool calls; first: a call over one uses no rate-limit room
            for quota_subject, quotas in self._quotas_of(caller):
                await self._check_quotas(quota_subject, quotas, now)
        if hits:
            await self._take(hits, now)

    async def admit_facade(self, endpoint: str, subject: str) -> None:
        """A request to the OAuth facade's ``register`` or ``token`` endpoint; ``subject``: the
        client id a token request names (registrations count together)."""
        now = self.clock.now()
        hits = [WindowHit(rule, subject, _window_start(now, rule)) for rule in self.rate_rules if rule.key == endpoint]
        if hits:
            await self._take(hits, now)

    @property
    def limits_facade(self) -> bool:
        return any(rule.key in FACADE_KEYS for rule in self.rate_rules)

    async def _take(self, hits: Sequence[WindowHit], now: float) -> None:
        assert self.counters is not None
        full = await self.blocking(self.counters.take, hits)
        if full is not None:
            raise RateLimited(full.rule, _seconds_until(full.window_end, now))

    def _quotas_of(self, caller: Principal) -> list[tuple[str, tuple[QuotaRule, ...]]]:
        """The quotas that apply to ``caller``, by whose usage totals count them: its own (its
        owner's) and, for a tenant's caller, its tenant's."""
        subjects = {"principal": caller.owner}
        if caller.tenant is not None:
            subjects["tenant"] = tenant_usage_subject(caller.tenant)
        applying = []
        for key, subject in subjects.items():
            rules = tuple(rule for rule in self.quota_rules if rule.key == key)
            if rules:
                applying.append((subject, rules))
        return applying

    async def _check_quotas(self, subject: str, quotas: Sequence[QuotaRule], now: float) -> None:
        assert self.usage is not None
        today = utc_day(now)
        used = await self.blocking(self.usage.calls, subject, month=month_of(today), day=today)
        for rule in quotas:
            count = used.day if rule.period == "day" else used.month
            if count >= rule.limit:
                resets_at = _period_end(now, rule.period)
                raise QuotaExceeded(rule, resets_at, _seconds_until(resets_at, now))


def refusal_error(refused: Refused) -> JsonRpcError:
    """The JSON-RPC error of a refusal (answered with HTTP 429 and ``Retry-After``): the rule
    by its key, what it allows, and when to come back."""
    data: JSONObject
    if isinstance(refused, QuotaExceeded):
        rule = refused.rule
        data = {
            "quota": refused.rule_name.removeprefix("quota:"),
            "allowed": f"{rule.limit}/{rule.period}",
            "resetsAt": iso_utc(refused.resets_at, "auto"),
            "retryAfterSeconds": refused.retry_after_seconds,
        }
        return JsonRpcError(QUOTA_EXCEEDED, str(refused), data, TOO_MANY_REQUESTS)
    assert isinstance(refused, RateLimited)
    data = {
        "limit": refused.rule.key,
        "allowed": f"{refused.rule.limit}/{refused.rule.period}",
        "retryAfterSeconds": refused.retry_after_seconds,
    }
    return JsonRpcError(RATE_LIMITED, str(refused), data, TOO_MANY_REQUESTS)


def _subject(rule: RateRule, caller: Principal, tool: str | None) -> str | None:
    """Whom ``rule`` counts this request for, or None when it does not apply to it."""
    if rule.key == "principal":
        return caller.owner
    if rule.key == "client":
        return caller.client_id
    if rule.key == "tenant":
        return caller.tenant
    if rule.tool is not None:
        return "" if rule.tool == tool else None
    return None  # the facade's rules: counted by admit_facade


def _window_start(now: float, rule: RateRule) -> int:
    return int(now // rule.seconds) * rule.seconds


def _seconds_until(instant: float, now: float) -> int:
    return max(1, math.ceil(instant - now))


def _period_end(now: float, period: str) -> float:
    """The next 00:00 UTC (``day``) or first of the month (``month``) after ``now``."""
    moment = datetime.fromtimestamp(now, tz=UTC)
    start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "day":
        return start.timestamp() + 86_400
    first = start.replace(day=1)
    if first.month == 12:
        return first.replace(year=first.year + 1, month=1).timestamp()
    return first.replace(month=first.month + 1).timestamp()
