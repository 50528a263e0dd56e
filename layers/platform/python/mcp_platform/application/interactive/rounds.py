"""2026-07-28 multi-round-trip requests: the tool runs again from the start on every round.

A request's answers are those its verified ``requestState`` carries (earlier rounds) plus the
``inputResponses`` to the questions that state left pending. Without a state, the responses may
answer the run's first set of questions only (a client may know them in advance). An answer is
used only for the question it was given to (same key, same question digest); any other response
is ignored. Questions still unanswered end the run with ``InputRequired`` (``protocol.input_required``), which
:func:`input_required_result` turns into an ``InputRequiredResult`` with a new state: never
committed, never cached (no ``ttlMs``/``cacheScope``), never an event.

A verified state is consumed before the tool runs (one-time, :meth:`.ports.StateVault.consume`);
a replay of an idempotent call that already committed is answered from its marker instead.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_platform.application.interactive.digests import question_digest, salient_digest
from mcp_platform.application.interactive.ports import StateKeysMissing
from mcp_platform.application.stored_form import STORED_FORM
from mcp_platform.protocol.input_required import InputRequired
from mcp_platform.protocol.interactive import InputRequest, InvalidInputResponse, check_answer
from mcp_platform.protocol.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LIMIT_EXCEEDED,
    JSONObject,
    JsonRpcError,
    Request,
)
from mcp_platform.protocol.request_context import RequestContext

if TYPE_CHECKING:
    from mcp_platform.application.interactive.ports import StateVault
    from mcp_platform.application.interactive.services import InteractiveServices
    from mcp_platform.application.interactive.state import Binding

logger = logging.getLogger(__name__)


class RoundInteraction:
    """The answers one 2026 request can give its run (``api.Interaction``)."""

    def __init__(
        self,
        responses: Mapping[str, Any],
        known: dict[str, dict[str, Any]],
        open_keys: dict[str, str] | None,
        round_: int,
    ) -> None:
        self.responses = responses
        self.known = known
        self.open_keys = open_keys
        """key -> question digest the responses may answer; None: the run's first questions."""
        self.accepted: dict[str, dict[str, Any]] = {}
        """Answers taken from this request's responses: carried into the next state."""
        self.round = round_

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, JSONObject]:
        if self.open_keys is None:
            self.open_keys = {key: question_digest(request) for key, request in requests.items()}
        answers: dict[str, JSONObject] = {}
        missing: dict[str, InputRequest] = {}
        for key, request in requests.items():
            question = question_digest(request)
            held = self.accepted.get(key) or self.known.get(key)
            if held is not None and held["q"] == question:
                answers[key] = held["a"]
            elif self.open_keys.get(key) == question and key in self.responses:
                try:
                    answer = check_answer(request.method, self.responses[key], STORED_FORM)
                except InvalidInputResponse as exc:
                    raise JsonRpcError(INVALID_PARAMS, f"inputResponses.{key}: {exc}") from exc
                self.accepted[key] = {"q": question, "a": answer}
                answers[key] = answer
            else:
                missing[key] = request
        if missing:
            raise InputRequired(missing)
        return answers


def _vault(services: InteractiveServices | None) -> StateVault:
    try:
        if services is None:
            raise StateKeysMissing("no interactive services configured")
        return services.vault
    except StateKeysMissing as exc:
        logger.error("2026 input-required round refused: %s", exc)
        message = "This server cannot hold multi-round requests (no request-state key)"
        raise JsonRpcError(INTERNAL_ERROR, message) from exc


def _binding(request: Request, call: RequestContext) -> Binding:
    from mcp_platform.application.interactive.state import Binding

    return Binding(call.principal, request.method, salient_digest(request))


async def open_round(
    request: Request, call: RequestContext, services: InteractiveServices | None, *, consume: bool
) -> RoundInteraction:
    """The request's interaction; verifies (and, when ``consume``, uses up) its requestState."""
    responses = request.params.get("inputResponses", {})
    if not isinstance(responses, dict):
        raise JsonRpcError(INVALID_PARAMS, "params.inputResponses must be an object (an InputResponses map)")
    if "requestState" not in request.params:
        return RoundInteraction(responses, {}, None, 1)
    token = request.params["requestState"]
    if not isinstance(token, str):
        raise JsonRpcError(INVALID_PARAMS, "params.requestState must be the string the server sent")
    from mcp_platform.application.interactive.keys import KeyRingError
    from mcp_platform.application.interactive.state import InvalidRequestState

    vault = _vault(services)
    assert services is not None  # _vault refused the request otherwise
    try:
        state = await services.blocking(vault.open, token, _binding(request, call))
        if consume:
            await services.blocking(vault.consume, state)
    except InvalidRequestState as exc:
        raise JsonRpcError(INVALID_PARAMS, str(exc)) from exc
    except KeyRingError as exc:
        logger.error("requestState not verifiable: %s", exc)
        raise JsonRpcError(INTERNAL_ERROR, "requestState cannot be verified right now; retry shortly") from exc
    return RoundInteraction(responses, state.answers, state.pending, state.round)


async def input_required_result(
    needed: InputRequired, request: Request, call: RequestContext, services: InteractiveServices | None
) -> dict[str, Any]:
    """The InputRequiredResult of a run that stopped at ``needed``, with its sealed state."""
    from mcp_platform.application.interactive.keys import KeyRingError

    interaction = call.channel.interaction
    if not isinstance(interaction, RoundInteraction):
        raise JsonRpcError(INTERNAL_ERROR, "input required outside a multi-round request")
    vault = _vault(services)
    assert services is not None  # _vault refused the request otherwise
    answers = {**interaction.known, **interaction.accepted}
    pending = {key: question_digest(asked) for key, asked in needed.requests.items()}
    state = vault.new_state(answers, pending, interaction.round + 1)
    try:
        token = await services.blocking(vault.seal, _binding(request, call), state)
    except KeyRingError as exc:
        logger.error("requestState not sealable: %s", exc)
        raise JsonRpcError(INTERNAL_ERROR, "The request needs input but its state cannot be sealed; retry") from exc
    except ValueError as exc:
        data: JSONObject = {"limit": "request_state"}
        raise JsonRpcError(LIMIT_EXCEEDED, f"Too much input for one request: {exc}", data) from exc
    requests = {key: asked.to_wire() for key, asked in needed.requests.items()}
    return {"resultType": "input_required", "inputRequests": requests, "requestState": token}
