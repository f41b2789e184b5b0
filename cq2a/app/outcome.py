"""How a run or a suite run ended: finished, stopped (a cause the user can remove, then carry
on), or failed (an error, with its traceback). Nothing raised while the work runs is lost: it
becomes the outcome, and the caller writes every file from what was done."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import BaseModel

from cq2a.adapters.llm.breaker import LLMUnavailable
from cq2a.adapters.llm.usage import BudgetExceeded
from cq2a.runtime.preflight import JudgeProbeFailed, PreflightFailed

#: Why a run stops early, saving what it has: a spending cap, an LLM outage, a missing
#: component, an untrustworthy judge, Ctrl-C. Once the cause is gone the run carries on
#: (``--resume`` for ``cq2a run``, ``--retry-errors`` for ``cq2a test``).
STOP_ERRORS: tuple[type[BaseException], ...] = (
    BudgetExceeded,
    LLMUnavailable,
    PreflightFailed,
    JudgeProbeFailed,
    KeyboardInterrupt,
)


class Outcome(BaseModel):
    """How the work ended; ``error`` holds a failure's type, message and traceback."""

    status: str = "finished"
    message: str = ""
    error: dict[str, str] | None = None


@contextmanager
def outcome_of_work() -> Iterator[Outcome]:
    """Yield an outcome that says "finished" unless the block raises: a stop error makes it
    "stopped" with the error's message, any other exception "failed" with its traceback."""
    outcome = Outcome()
    try:
        yield outcome
    except STOP_ERRORS as error:
        outcome.status, outcome.message = "stopped", str(error) or "interrupted"
    except Exception as error:
        outcome.status = "failed"
        outcome.message = f"{type(error).__name__}: {error}"
        outcome.error = {
            "type": type(error).__name__,
            "message": str(error),
            "traceback": traceback.format_exc(),
        }
