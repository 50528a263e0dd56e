"""Process set-up that must happen before boto3 or the domain package is imported."""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The same import roots the Lambda runtime sees (/opt/python + /var/task per function).
IMPORT_ROOTS = (
    ROOT / "layers" / "platform" / "python",
    ROOT / "functions" / "endpoint",
    ROOT / "functions" / "ingest",
    ROOT / "functions" / "audit",
    ROOT,
)
LOOPBACK = "127.0.0.1"
# The features folder: where the endpoint's tools, resources and prompts are discovered.
DEFAULT_FEATURES_DIR = ROOT / "functions" / "endpoint" / "mcp_tools"
DEFAULT_REGION = "us-east-1"
# Where the local endpoints write their log lines as deployed (local/endpoint_log.py).
DEFAULT_LOG_DIR = ROOT / "build" / "local"
DUMMY_SECRET = "local"  # noqa: S105 - a placeholder credential the emulator accepts, not a secret


def add_import_roots() -> None:
    for root in reversed(IMPORT_ROOTS):
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))


DEFAULT_ITEM_TTL_S = 300.0  # X2: the stack's dax_item_ttl_seconds default, for the local item cache


@dataclass(frozen=True)
class LocalOptions:
    """What a user can set: ports, region, auth mode, a fixed API key and the TTL sweep interval."""

    mcp_port: int
    aws_port: int
    region: str
    auth_mode: str  # "" = what the template says (api_key)
    api_key: str  # "" = mint a fresh one
    attach: bool
    ttl_sweep_s: float = 5.0  # emulated TTL deletion (local/ttl.py); 0 = never, as on plain moto
    health_s: float = 300.0  # a health line this often (local/health.py); 0 = only on SIGUSR1
    stream_retention_s: float = 600.0  # consumed table-stream records older than this are dropped
    fixtures: tuple[str, ...] = ()  # fixture packs the endpoint loads next to its tools (local/fixtures.py)
    features_dir: Path = DEFAULT_FEATURES_DIR  # served, and reloaded when it changes (local/reload.py)
    reload_s: float = 0.5  # how often the features folder is looked at; 0 = never reload
    dax_item_ttl_s: float = DEFAULT_ITEM_TTL_S  # the local item cache's TTL (LOCAL_DAX_ITEM_TTL_SECONDS)
    log_dir: Path = DEFAULT_LOG_DIR  # the endpoints' log files, per emulator port (LOCAL_LOG_DIR): run_dir
    # Functions whose event source mappings are not polled, as a mapping with Enabled: false on AWS
    # (LOCAL_DISABLED_MAPPINGS, e.g. "ingest"): their records wait in the stream or the queue.
    disabled_mappings: tuple[str, ...] = ()

    def mapping_disabled(self, function_name: str) -> bool:
        """``function_name`` (``mcp-dev-processing-ingest``) is named, whole or by its last word."""
        return any(function_name == name or function_name.endswith(f"-{name}") for name in self.disabled_mappings)

    @property
    def aws_endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.aws_port}"

    @property
    def mcp_url(self) -> str:
        return f"http://{LOOPBACK}:{self.mcp_port}/mcp"

    @property
    def run_dir(self) -> Path:
        """What the platform on this emulator leaves on disk: its endpoints' log files
        (``endpoint-<MCP port>.jsonl``) and its operations environment. The emulator's port names
        the folder, so `python -m local.trace` and `python -m local.ops` find them from it."""
        return self.log_dir / f"aws-{self.aws_port}"

    @property
    def endpoint_log(self) -> Path:
        return self.run_dir / f"endpoint-{self.mcp_port}.jsonl"

    @classmethod
    def from_env(cls, *, attach: bool, fixtures: tuple[str, ...] = ()) -> LocalOptions:
        default_mcp = "8001" if attach else "8000"
        return cls(
            mcp_port=_port("MCP_PORT", os.environ.get("MCP_PORT") or default_mcp),
            aws_port=_port("LOCAL_AWS_PORT", os.environ.get("LOCAL_AWS_PORT") or "4566"),
            region=os.environ.get("LOCAL_AWS_REGION") or DEFAULT_REGION,
            auth_mode=os.environ.get("MCP_AUTH", ""),
            api_key=os.environ.get("MCP_API_KEY", ""),
            attach=attach,
            fixtures=fixtures,
            ttl_sweep_s=_seconds("LOCAL_TTL_SWEEP_SECONDS", os.environ.get("LOCAL_TTL_SWEEP_SECONDS") or "5"),
            health_s=_seconds("LOCAL_HEALTH_SECONDS", os.environ.get("LOCAL_HEALTH_SECONDS") or "300", 86400),
            stream_retention_s=_seconds(
                "LOCAL_STREAM_RETENTION_SECONDS", os.environ.get("LOCAL_STREAM_RETENTION_SECONDS") or "600", 86400
            ),
            features_dir=_features_dir(os.environ.get("MCP_FEATURES_DIR") or str(DEFAULT_FEATURES_DIR)),
            reload_s=_seconds("LOCAL_RELOAD_SECONDS", os.environ.get("LOCAL_RELOAD_SECONDS") or "0.5", 60),
            dax_item_ttl_s=_seconds(
                "LOCAL_DAX_ITEM_TTL_SECONDS",
                os.environ.get("LOCAL_DAX_ITEM_TTL_SECONDS") or str(DEFAULT_ITEM_TTL_S),
                86400,
            ),
            log_dir=Path(os.environ.get("LOCAL_LOG_DIR") or str(DEFAULT_LOG_DIR)).expanduser().resolve(),
            disabled_mappings=tuple(
                name.strip() for name in os.environ.get("LOCAL_DISABLED_MAPPINGS", "").split(",") if name.strip()
            ),
        )


def _port(name: str, raw: str) -> int:
    try:
        port = int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a port number, got {raw!r}") from None
    if not 1 <= port <= 65535:
        raise SystemExit(f"{name} must be between 1 and 65535, got {port}")
    return port


def _seconds(name: str, raw: str, maximum: float = 3600) -> float:
    try:
        seconds = float(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a number of seconds, got {raw!r}") from None
    if not 0 <= seconds <= maximum:
        raise SystemExit(f"{name} must be between 0 and {maximum:g} seconds, got {raw}")
    return seconds


def _features_dir(raw: str) -> Path:
    directory = Path(raw).expanduser().resolve()
    if not (directory / "__init__.py").is_file():
        raise SystemExit(f"MCP_FEATURES_DIR must be a package folder (with an __init__.py), got {raw!r}")
    return directory


def isolate_from_real_aws(options: LocalOptions) -> None:
    """Every boto3 client of this process talks to the emulator with dummy credentials.

    AWS_ENDPOINT_URL is honoured by botocore for every client, so even a client built deep in
    the domain code cannot reach a real account; profiles are dropped so a user's
    ~/.aws/config cannot redirect credentials, and IMDS is never probed.
    """
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_LAMBDA_FUNCTION_NAME"):
        os.environ.pop(name, None)
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": DUMMY_SECRET,
            "AWS_SECRET_ACCESS_KEY": DUMMY_SECRET,
            "AWS_REGION": options.region,
            "AWS_DEFAULT_REGION": options.region,
            "AWS_ENDPOINT_URL": options.aws_endpoint,
            "AWS_EC2_METADATA_DISABLED": "true",
            # botocore would send DynamoDB (Streams) calls to an account-specific host.
            "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
            "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": os.environ.get(
                "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20"
            ),
        }
    )


def port_is_free(port: int) -> bool:
    """Whether a server can listen on ``port``. Bound with SO_REUSEADDR, as uvicorn and werkzeug
    (the emulator) bind: connections a stopped server left in TIME_WAIT (a minute on Linux) do
    not block them, so they must not block a restart either; a live listener still does."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True
