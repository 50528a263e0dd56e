"""Deployments: every function published as a version behind the alias ``live``, and CodeDeploy
moving each alias to the new version as the ``deployment`` context key says, rolling it back on an
alarm.

Whatever invokes a function invokes its alias: the Function URL, the event source mappings (the
Kinesis consumer's, the table stream's) and the task queue's trigger (:func:`live_alias`, called
by each function's construct). So a deployment publishes new versions and CodeDeploy shifts each
alias's traffic to them (canary: a share first, the rest after the interval; linear: a share every
interval; all at once), watching the rollback alarms the whole time: the endpoint's error rate and
p99, every dead-letter queue's, and the function's own errors. An alarm that fires moves the alias
back to the previous version. During the shift both versions serve one table, one stream and one
queue: the upgrade rule (docs/operating/upgrades.md) is what keeps that safe.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_codedeploy as codedeploy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

LIVE_ALIAS = "live"
ALL_AT_ONCE = "all_at_once"
CANARY, LINEAR = "canary", "linear"
_CANARY = re.compile(r"^canary(?P<percentage>\d{1,2})_(?P<minutes>\d{1,4})min$")
_LINEAR = re.compile(r"^linear(?P<percentage>\d{1,2})_every(?P<minutes>\d{1,4})min$")
SPELLINGS = "all_at_once, canary<P>_<M>min (e.g. canary10_5min) or linear<P>_every<M>min (e.g. linear10_every1min)"
MAX_INTERVAL_MINUTES = 2880  # CodeDeploy's longest interval for a time-based config (two days)
CODEDEPLOY_POLICY = "service-role/AWSCodeDeployRoleForLambdaLimited"  # what CDK's own role for a group gets
MAX_ALARMS = 10  # CodeDeploy watches at most 10 alarms per deployment group
# The predefined configurations (CodeDeployDefault.Lambda*): used by name when a strategy is one.
_PREDEFINED = {
    (CANARY, 10, 5): codedeploy.LambdaDeploymentConfig.CANARY_10_PERCENT_5_MINUTES,
    (CANARY, 10, 10): codedeploy.LambdaDeploymentConfig.CANARY_10_PERCENT_10_MINUTES,
    (CANARY, 10, 15): codedeploy.LambdaDeploymentConfig.CANARY_10_PERCENT_15_MINUTES,
    (CANARY, 10, 30): codedeploy.LambdaDeploymentConfig.CANARY_10_PERCENT_30_MINUTES,
    (LINEAR, 10, 1): codedeploy.LambdaDeploymentConfig.LINEAR_10_PERCENT_EVERY_1_MINUTE,
    (LINEAR, 10, 2): codedeploy.LambdaDeploymentConfig.LINEAR_10_PERCENT_EVERY_2_MINUTES,
    (LINEAR, 10, 3): codedeploy.LambdaDeploymentConfig.LINEAR_10_PERCENT_EVERY_3_MINUTES,
    (LINEAR, 10, 10): codedeploy.LambdaDeploymentConfig.LINEAR_10_PERCENT_EVERY_10_MINUTES,
}


class InvalidDeployment(ValueError):
    """A ``deployment`` value that names no strategy; the message says what is allowed."""


@dataclass(frozen=True)
class DeploymentStrategy:
    """How a deployment moves the aliases: ``kind`` all at once, canary or linear; ``percentage``
    of the traffic per step and ``interval_minutes`` between steps (both 0 all at once)."""

    kind: str
    percentage: int = 0
    interval_minutes: int = 0

    @property
    def spelling(self) -> str:
        if self.kind == CANARY:
            return f"canary{self.percentage}_{self.interval_minutes}min"
        if self.kind == LINEAR:
            return f"linear{self.percentage}_every{self.interval_minutes}min"
        return ALL_AT_ONCE

    @classmethod
    def parse(cls, value: object) -> DeploymentStrategy:
        text = str(value).strip().lower()
        if text == ALL_AT_ONCE:
            return cls(ALL_AT_ONCE)
        for kind, pattern in ((CANARY, _CANARY), (LINEAR, _LINEAR)):
            match = pattern.fullmatch(text)
            if match is None:
                continue
            percentage, minutes = int(match["percentage"]), int(match["minutes"])
            if not 1 <= percentage <= 99:
                raise InvalidDeployment(f"a {kind} step of 1-99 percent")
            if not 1 <= minutes <= MAX_INTERVAL_MINUTES:
                raise InvalidDeployment(f"a {kind} interval of 1-{MAX_INTERVAL_MINUTES} minutes")
            return cls(kind, percentage, minutes)
        raise InvalidDeployment(SPELLINGS)


DEV_DEPLOYMENT = DeploymentStrategy(ALL_AT_ONCE)
DEFAULT_DEPLOYMENT = DeploymentStrategy(CANARY, 10, 5)  # outside dev stages


def live_alias(function: lambda_.Function, *, provisioned_concurrency: int | None = None) -> lambda_.Alias:
    """The function's ``live`` alias on its current version (a new version whenever its code or
    configuration changes): what every invoker of the function is pointed at."""
    return lambda_.Alias(
        function,
        "Live",
        alias_name=LIVE_ALIAS,
        version=function.current_version,
        provisioned_concurrent_executions=provisioned_concurrency,
    )


@dataclass(frozen=True)
class RollbackAlarms:
    """What rolls a deployment back: ``shared`` for every function (the endpoint's error rate and
    p99, every DLQ's), and each function's own (its errors), by the name its alias has here."""

    shared: Sequence[cw.IAlarm]
    own: Mapping[str, Sequence[cw.IAlarm]]


class TrafficShifting(Construct):
    """One CodeDeploy application and a deployment group per alias, each shifting its alias with
    ``strategy`` and rolling back on its alarms, on a failed deployment, or on one stopped."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        strategy: DeploymentStrategy,
        aliases: Mapping[str, lambda_.Alias],
        alarms: RollbackAlarms,
    ) -> None:
        super().__init__(scope, construct_id)
        self.strategy = strategy
        self.application = codedeploy.LambdaApplication(self, "Application")
        # One role for every group: what CodeDeploy may do to move an alias and read its alarms.
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("codedeploy.amazonaws.com"),
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(CODEDEPLOY_POLICY)],
        )
        self.config = self._config(strategy)
        self.groups: dict[str, codedeploy.LambdaDeploymentGroup] = {}
        for name, alias in aliases.items():
            watched = [*alarms.shared, *alarms.own.get(name, ())]
            if len(watched) > MAX_ALARMS:
                raise ValueError(f"{name}: {len(watched)} rollback alarms, CodeDeploy watches at most {MAX_ALARMS}")
            self.groups[name] = codedeploy.LambdaDeploymentGroup(
                self,
                name,
                application=self.application,
                alias=alias,
                deployment_config=self.config,
                role=self.role,
                alarms=watched,
                auto_rollback=codedeploy.AutoRollbackConfig(
                    failed_deployment=True, stopped_deployment=True, deployment_in_alarm=True
                ),
            )

    def _config(self, strategy: DeploymentStrategy) -> codedeploy.ILambdaDeploymentConfig:
        if strategy.kind == ALL_AT_ONCE:
            return codedeploy.LambdaDeploymentConfig.ALL_AT_ONCE
        predefined = _PREDEFINED.get((strategy.kind, strategy.percentage, strategy.interval_minutes))
        if predefined is not None:
            return predefined
        interval = Duration.minutes(strategy.interval_minutes)
        routing = (
            codedeploy.TrafficRouting.time_based_canary(interval=interval, percentage=strategy.percentage)
            if strategy.kind == CANARY
            else codedeploy.TrafficRouting.time_based_linear(interval=interval, percentage=strategy.percentage)
        )
        return codedeploy.LambdaDeploymentConfig(self, "Config", traffic_routing=routing)
