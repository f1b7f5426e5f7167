# Types of the lazily exported library API (the .py resolves these names on first use).
from greenloop.agents.base import Agent as Agent
from greenloop.agents.base import AgentOutcome as AgentOutcome
from greenloop.agents.base import AgentRequest as AgentRequest
from greenloop.batch.run import BatchResult as BatchResult
from greenloop.batch.run import run_batch as run_batch
from greenloop.config import Config as Config
from greenloop.config import StageSpec as StageSpec
from greenloop.errors import FatalError as FatalError
from greenloop.loop.checking import check as check
from greenloop.loop.history import Iteration as Iteration
from greenloop.loop.history import LoopResult as LoopResult
from greenloop.loop.loop import run_loop as run_loop
from greenloop.loop.policy import Result as Result
from greenloop.verify.classify import Verdict as Verdict

__version__: str
