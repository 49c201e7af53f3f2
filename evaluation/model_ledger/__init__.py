"""What the trials' and the generation searches' model-call ledgers share (both import it; it
imports neither), and the budget both kinds of run are launched with: calls.py, the fields of a
recorded model call (`ModelCallFields`, an abstract model both ledgers' tables build on) and the one
way a call is written (`model_call_create`); holds.py, a run's budget held by calls in flight
(`budget_hold`) and the worker's bounded database slots for the gateway's threads
(`database_slot`); budgets.py, the one USD budget parser and range of evaluation and generation
launches (`budget_usd_parse`), the budget the held calls count against."""
