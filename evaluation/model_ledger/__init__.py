"""What the trials' and the generation searches' model-call ledgers share (both import it; it
imports neither): calls.py, the fields of a recorded model call (`ModelCallFields`, an abstract
model both ledgers' tables build on) and the one way a call is written (`model_call_create`);
holds.py, a run's budget held by calls in flight (`budget_hold`) and the worker's bounded database
slots for the gateway's threads (`database_slot`)."""
