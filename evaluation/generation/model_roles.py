"""The proposer and the judge as model endpoints (the `Proposer` and `Judge` protocols of `contracts`).

    proposer = ModelProposer({"name": "gpt-proposer", "api": "openai", "route": "responses", ...}, ledger=ledger)
    try:
        result = proposer.propose(request)   # ProposalResult: a proposal, or an error; never raises
    finally:
        proposer.close()

Each holds its own gateway to its endpoint (the agents' gateway: key, prices, budget through the
ledger it is handed, limits, retries), so one is made per search or per judging pass and closed after.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from evaluation.gateway.ledger import Ledger

from .contracts import JudgementResult, JudgeRequest, ProposalRequest, ProposalResult
from .endpoints import Endpoint, endpoint_from_config
from .model_calls import ModelConversation
from .prompts import JUDGE_V1, PROPOSER_V1, PromptTemplate, render_judgement, render_proposal
from .replies import parse_judgement, parse_proposal


def _endpoint(config: Endpoint | Mapping[str, Any]) -> Endpoint:
    return config if isinstance(config, Endpoint) else endpoint_from_config(config)


class _ModelRole:
    role = ""

    def __init__(
        self, endpoint: Endpoint | Mapping[str, Any], *, ledger: Ledger | None = None, template: PromptTemplate
    ) -> None:
        self.endpoint = _endpoint(endpoint)
        self.name = self.endpoint.name
        self.template = template
        self.conversation = ModelConversation(self.endpoint, self.role, ledger=ledger)

    def close(self) -> None:
        self.conversation.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ModelProposer(_ModelRole):
    role = "proposer"

    def __init__(
        self,
        endpoint: Endpoint | Mapping[str, Any],
        *,
        ledger: Ledger | None = None,
        template: PromptTemplate = PROPOSER_V1,
    ) -> None:
        super().__init__(endpoint, ledger=ledger, template=template)

    def propose(self, request: ProposalRequest) -> ProposalResult:
        outcome = self.conversation.converse(
            self.template,
            render_proposal(request, self.template),
            lambda text: parse_proposal(text, request.perturbations),
        )
        return ProposalResult(outcome.value, outcome.calls, outcome.error, outcome.budget_spent)


class ModelJudge(_ModelRole):
    role = "judge"

    def __init__(
        self,
        endpoint: Endpoint | Mapping[str, Any],
        *,
        ledger: Ledger | None = None,
        template: PromptTemplate = JUDGE_V1,
    ) -> None:
        super().__init__(endpoint, ledger=ledger, template=template)

    def score(self, request: JudgeRequest) -> JudgementResult:
        outcome = self.conversation.converse(self.template, render_judgement(request, self.template), parse_judgement)
        return JudgementResult(outcome.value, outcome.calls, outcome.error, outcome.budget_spent)
