"""Default AWS client construction, in one place.

Callers inject their own clients (tests pass moto-backed ones); these helpers are used only
when none is passed. ``AWS_ENDPOINT_URL`` (the local emulator) is honoured by botocore itself.
"""

from __future__ import annotations

from typing import Any, cast

from mcp_platform.config import Settings


def aws_client(service: str, settings: Settings, **config: Any) -> Any:
    """A boto3 client for ``service`` in the configured region (adaptive retries by default)."""
    import boto3  # deferred: ~0.25 s of cold start, paid only when a default is needed
    from botocore.config import Config

    retries = config.pop("retries", {"max_attempts": 3, "mode": "standard"})
    return cast(Any, boto3).client(
        service,
        region_name=settings.region,
        endpoint_url=settings.aws_endpoint_url or None,
        config=Config(retries=retries, **config),
    )
