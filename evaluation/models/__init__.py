"""The evaluation app's models, one module per group, all importable as `evaluation.models.X`.

agents.py (agents, their kinds and backends), runs.py, trials.py (trials, their pinned inputs and
transcripts), model_calls.py (gateway calls, budget holds), reference_checks.py, rescores.py (kept final
states and re-scores); taxonomy.py says how a trial ended and storage.py where final states are kept.
The fleet's and generation's models live with their packages and are imported here so Django finds them.
"""

from __future__ import annotations

from evaluation.fleet.models import WorkerHeartbeat as WorkerHeartbeat
from evaluation.generation.models import GenerationBudgetHold as GenerationBudgetHold
from evaluation.generation.models import GenerationModelCall as GenerationModelCall
from evaluation.generation.models import GenerationRun as GenerationRun
from evaluation.generation.models import GenerationSearch as GenerationSearch
from evaluation.generation.models import GenerationStep as GenerationStep

from .agents import LAUNCHABLE_BACKENDS as LAUNCHABLE_BACKENDS
from .agents import Agent as Agent
from .agents import AgentKind as AgentKind
from .agents import Backend as Backend
from .agents import NetworkMode as NetworkMode
from .model_calls import ModelBudgetHold as ModelBudgetHold
from .model_calls import ModelCall as ModelCall
from .model_calls import ModelRoute as ModelRoute
from .reference_checks import FLAG_REASONS as FLAG_REASONS
from .reference_checks import ReferenceCheck as ReferenceCheck
from .reference_checks import ReferenceVerdict as ReferenceVerdict
from .rescores import FinalState as FinalState
from .rescores import Rescore as Rescore
from .rescores import RescoreStatus as RescoreStatus
from .runs import DemoRun as DemoRun
from .runs import Protocol as Protocol
from .runs import Run as Run
from .taxonomy import NO_VERDICT_ENDS as NO_VERDICT_ENDS
from .taxonomy import VERDICT_ENDS as VERDICT_ENDS
from .taxonomy import TrialEnd as TrialEnd
from .trials import CURRENT as CURRENT
from .trials import FINISHED_STATUSES as FINISHED_STATUSES
from .trials import LABELLED_STATUSES as LABELLED_STATUSES
from .trials import OUTCOME_CHOICES as OUTCOME_CHOICES
from .trials import RISK_OUTCOMES as RISK_OUTCOMES
from .trials import SHA256_PATTERN as SHA256_PATTERN
from .trials import TWIN_OUTCOMES as TWIN_OUTCOMES
from .trials import TranscriptStep as TranscriptStep
from .trials import Trial as Trial
from .trials import TrialInputs as TrialInputs
from .trials import TrialKind as TrialKind
from .trials import TrialStatus as TrialStatus
