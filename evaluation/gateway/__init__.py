"""The model gateway: the only way an agent reaches its model, with the real key added in the worker.

    with gateway_for_trial(trial_id, upstream) as gw:
        gw.socket_path          # bind into a sandbox; the harness calls http://gateway/v1/... through it
        gw.post_json("/v1/chat/completions", payload)   # the same path for callers in the worker

It forwards POST /v1/chat/completions and /v1/responses (api "openai") or POST /v1/messages (api
"anthropic") to the one upstream of the agent's configuration, streaming included, and refuses
everything else with a 4xx JSON error; it replaces any credential the client sent with the real
key (from the worker's environment variable the configuration names, VERIHARM_AGENT_KEY_*), records
every call with its tokens and cost, stops at the run's budget, and applies the endpoint's
concurrency and rate limits and bounded retries.
"""

from .config import KEY_ENV_PREFIX, Api, Price, Upstream, upstream_from_config
from .core import Budget, BudgetExhausted, Gateway, GatewayResponse
from .server import SOCKET_NAME, TrialGateway, gateway_for_trial, serve

__all__ = [
    "KEY_ENV_PREFIX",
    "SOCKET_NAME",
    "Api",
    "Budget",
    "BudgetExhausted",
    "Gateway",
    "GatewayResponse",
    "Price",
    "TrialGateway",
    "Upstream",
    "gateway_for_trial",
    "serve",
    "upstream_from_config",
]
