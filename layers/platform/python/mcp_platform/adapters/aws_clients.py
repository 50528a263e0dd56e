"""Default AWS client construction, in one place.

Callers inject their own clients (tests pass moto-backed ones); these helpers are used only
when none is passed. ``AWS_ENDPOINT_URL`` (the local emulator) is honoured by botocore itself.

The clients are typed by the boto3-stubs service packages (``mypy_boto3_*``, a development
dependency), imported only when type checking: the services the platform uses get their client
type; any other service (a features package's own) is untyped.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from mcp_platform.config import Settings

if TYPE_CHECKING:
    from botocore.session import Session
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_secretsmanager import SecretsManagerClient
    from mypy_boto3_sqs import SQSClient

_session: Session | None = None
_session_lock = threading.Lock()  # botocore sessions are not safe to build clients on concurrently


@overload
def aws_client(service: Literal["dynamodb"], settings: Settings, **config: Any) -> DynamoDBClient: ...
@overload
def aws_client(service: Literal["kinesis"], settings: Settings, **config: Any) -> KinesisClient: ...
@overload
def aws_client(service: Literal["sqs"], settings: Settings, **config: Any) -> SQSClient: ...
@overload
def aws_client(service: Literal["secretsmanager"], settings: Settings, **config: Any) -> SecretsManagerClient: ...
@overload
def aws_client(service: Literal["dynamodbstreams"], settings: Settings, **config: Any) -> DynamoDBStreamsClient: ...
@overload
def aws_client(service: Literal["cloudformation"], settings: Settings, **config: Any) -> CloudFormationClient: ...
@overload
def aws_client(service: Literal["cloudwatch"], settings: Settings, **config: Any) -> CloudWatchClient: ...
@overload
def aws_client(service: str, settings: Settings, **config: Any) -> Any: ...
def aws_client(service: str, settings: Settings, **config: Any) -> Any:
    """A botocore client for ``service`` in the configured region (standard retries by default).

    botocore directly, not ``boto3.client``: the same client, without importing boto3 and
    s3transfer (tens of milliseconds of a cold start), from one session shared by every client."""
    import botocore.session  # deferred: paid only when a default client is needed
    from botocore.config import Config

    global _session
    retries = config.pop("retries", {"max_attempts": 3, "mode": "standard"})
    with _session_lock:
        if _session is None:
            _session = botocore.session.get_session()
        return _session.create_client(
            service,
            region_name=settings.region,
            endpoint_url=settings.aws_endpoint_url or None,
            config=Config(retries=retries, **config),
        )


@overload
def lazy_client(service: Literal["dynamodb"], settings: Settings, **config: Any) -> DynamoDBClient: ...
@overload
def lazy_client(service: Literal["kinesis"], settings: Settings, **config: Any) -> KinesisClient: ...
@overload
def lazy_client(service: Literal["sqs"], settings: Settings, **config: Any) -> SQSClient: ...
@overload
def lazy_client(service: Literal["secretsmanager"], settings: Settings, **config: Any) -> SecretsManagerClient: ...
@overload
def lazy_client(service: str, settings: Settings, **config: Any) -> Any: ...
def lazy_client(service: str, settings: Settings, **config: Any) -> Any:
    """:class:`LazyClient` typed as the client it stands for (it reads every attribute through)."""
    return cast(Any, LazyClient(service, settings, **config))


class LazyClient:
    """Builds the real client on first use, so start-up (cold start) pays for loading a
    service's model only when some request needs it: the Kinesis producer (it flushes after the
    result is sent), the DLQ (used only on failure), DynamoDB (never used by a stateless call
    without an API key). Once built, each attribute is the real client's, read through.
    """

    def __init__(self, service: str, settings: Settings, **config: Any) -> None:
        self._service = service
        self._settings = settings
        self._config = config
        self._client: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = aws_client(self._service, self._settings, **self._config)
        return getattr(self._client, name)
