"""The SDK's errors as a port's: what the application catches is its own error type.

A throttle the gateway gave up on is already ``StoreThrottled`` (not an SDK error) and passes
as it is; any other ``ClientError`` (DynamoDB answered an error) or ``BotoCoreError`` (it was
not reached) becomes ``error``, chained, with the error code in its message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from botocore.exceptions import BotoCoreError, ClientError

from mcp_platform.adapters.dynamodb.aws_errors import error_code


@contextlib.contextmanager
def translated(error: type[Exception], what: str) -> Iterator[None]:
    try:
        yield
    except ClientError as exc:
        raise error(f"{what} failed: {error_code(exc)}") from exc
    except BotoCoreError as exc:
        raise error(f"{what} failed: {type(exc).__name__}") from exc
