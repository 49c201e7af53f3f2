"""The model gateway: the only way an agent reaches its model, with the real key added in the worker.

    with serve(Gateway(upstream, trial_id=trial_id, ledger=ledger)) as gw:
        gw.socket_path          # bind into a sandbox; the harness calls http://gateway/v1/... through it
        gw.post_json("/v1/chat/completions", payload)   # the same path for callers in the worker

(`evaluation.trials.model_access.gateway_for_trial` builds one for a trial attempt with the database's
ledger: this package knows nothing of the database.)

It forwards POST /v1/chat/completions and /v1/responses (api "openai"), POST /v1/messages (api
"anthropic") or POST /v1beta/models/<model>:generateContent and :streamGenerateContent?alt=sse (api
"gemini") to the one upstream of the agent's configuration, streaming included (`routes.py`); answers
itself the requests a harness makes besides (a hello probe, model lists, token counts: `answers.py`),
and refuses everything else with a 4xx JSON error; it replaces any credential the client sent with the real
key (from the worker's environment variable the configuration names, VERIHARM_AGENT_KEY_*), records
every call with its tokens and cost through its ledger, reserves each call's cost under the run's
budget before forwarding it, and applies the trial's concurrency and rate limits, its cap on calls
and bounded retries.

Its modules: ``core`` (``Gateway``: admission, the one path, the record of each call), ``checks`` (what
a request must be before it is forwarded), ``forwarding`` (retries, the budget's hold, the answer passed
back), ``relay`` (a streamed answer, counted on the way), ``scrubbing`` (the key kept out of every
answer), ``calls`` (what is learnt of a call, its tokens at the end), ``responses`` (answers and
refusals in the API's own shape), ``server`` (the Unix socket), and ``config``, ``routes``,
``answers``, ``usage``, ``limits``, ``ledger``.
"""

from .config import KEY_ENV_PREFIX, Api, Price, Upstream, upstream_from_config
from .core import BudgetExhausted, Gateway
from .ledger import BudgetSpent, CallRecord, Ledger, Reservation
from .responses import GatewayResponse
from .server import SOCKET_NAME, TrialGateway, serve

__all__ = [
    "KEY_ENV_PREFIX",
    "SOCKET_NAME",
    "Api",
    "BudgetExhausted",
    "BudgetSpent",
    "CallRecord",
    "Gateway",
    "GatewayResponse",
    "Ledger",
    "Price",
    "Reservation",
    "TrialGateway",
    "Upstream",
    "serve",
    "upstream_from_config",
]
