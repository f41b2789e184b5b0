"""A scripted CQ2A run for the reliability tests and `evals.reliability`, in-process or as a
subprocess.

The scripted roles are stateless, so a run killed in one process and resumed in another gets the
same replies: each question carries its gold answer spelled backwards (no word of the answer shows,
so it passes the leak check), and the re-asker and the SUT read the answer back from it.

Subprocess use: ``python -m evals.reliability_worker INPUT RUN_DIR STATS_JSON [--resume]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

from cq2a.models.records import Context
from cq2a.settings import LLMSpec, Settings, SUTSpec
from cq2a.testing.script import PipelineScript
from cq2a.testing.scripted_server import ScriptedLLMServer

TEXTS = (
    "Rollo signed a treaty with King Charles III of West Francia in 911. "
    "The Normans later conquered England in 1066.",
    "The Amazon rainforest covers much of the Amazon basin of South America. "
    "Brazil holds about sixty percent of the forest.",
    "Marie Curie received the Nobel Prize in Physics in 1903. "
    "She later won a second prize in Chemistry.",
    "The Rhine flows from the Swiss Alps to the North Sea. "
    "Rotterdam lies near its mouth in the Netherlands.",
)
_QUOTED = re.compile(r"'([^']*)'")
#: A reply that is never similar to any gold answer: the re-ask vote for a bad question.
WRONG = "nothing at all"
SUT_MISS = "no idea"


def contexts(count: int, prefix: str = "ctx") -> list[Context]:
    return [Context(id=f"{prefix}{i:02d}", context=TEXTS[i % len(TEXTS)]) for i in range(count)]


def write_input(path: Path, items: list[Context]) -> Path:
    lines = [json.dumps({"id": c.id, "context": c.context}) for c in items]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _odd(answer: str) -> bool:
    return hashlib.sha256(answer.encode()).digest()[0] % 2 == 1


def questions(answer: str, has_feedback: bool) -> list[dict[str, str]]:
    """First round: one good question and one whose re-ask disagrees; with feedback, one more
    question, consistent for half of the answers (so some slots end rejected)."""
    code = answer[::-1]
    explanation = f"The passage names it: {answer}."
    if has_feedback:
        verb = "disagree" if _odd(answer) else "matches"
        question = f"On a second look, which wording {verb} with the reversed code '{code}'?"
        return [{"question": question, "explanation": explanation}]
    return [
        {
            "question": f"Which words of the passage read backwards as '{code}'?",
            "explanation": explanation,
        },
        {
            "question": f"Ignoring the text, what unrelated thing might '{code}' hint at?",
            "explanation": explanation,
        },
    ]


def votes(question: str) -> list[str]:
    match = _QUOTED.search(question)
    if match is None or "unrelated" in question or "disagree" in question:
        return [WRONG] * 5
    return [match.group(1)[::-1]] * 5


def judge(gold: str, sut: str) -> int:
    return 5 if sut == SUT_MISS else 95


def decoding_sut(items: list[Any]) -> list[str]:
    """The software under test: right on the first question of each answer, wrong on others."""
    answers = []
    for item in items:
        match = _QUOTED.search(item.question)
        if match and item.question.startswith("Which words"):
            answers.append(match.group(1)[::-1])
        else:
            answers.append(SUT_MISS)
    return answers


def swapped_sut(items: list[Any]) -> list[str]:
    """A second version of ``decoding_sut``: right exactly where it was wrong and wrong where it
    was right, so a suite re-run shows every earlier bug fixed and every pass newly failing."""
    first = decoding_sut(items)
    answers = []
    for item, answer in zip(items, first, strict=True):
        match = _QUOTED.search(item.question)
        answers.append(SUT_MISS if answer != SUT_MISS or match is None else match.group(1)[::-1])
    return answers


def broken_sut(items: list[Any]) -> list[str]:
    """A software under test that crashes on every call."""
    raise RuntimeError("SUT crashed")


def wrong_count_sut(items: list[Any]) -> list[str]:
    """A software under test that drops an answer."""
    return decoding_sut(items)[:-1]


def hanging_sut(items: list[Any]) -> list[str]:
    """A software under test that never answers."""
    threading.Event().wait()
    return []


#: While set, ``flaky_sut`` crashes: a SUT that is down for part of a run.
SUT_BROKEN = threading.Event()


def flaky_sut(items: list[Any]) -> list[str]:
    if SUT_BROKEN.is_set():
        raise RuntimeError("SUT crashed")
    return decoding_sut(items)


class AnswerLog:
    """What ``logging_sut`` was asked, after how many answers it crashes (None: never), and the
    passages each call of its ``index`` was handed."""

    def __init__(self) -> None:
        self.reset()

    def reset(self, crash_after: int | None = None) -> None:
        self.asked: list[str] = []
        self.crash_after = crash_after
        self.indexed: list[list[str]] = []


SUT_LOG = AnswerLog()


def logging_sut(items: list[Any]) -> list[str]:
    """``decoding_sut`` that logs each question it answers in ``SUT_LOG`` and, once it has
    answered ``SUT_LOG.crash_after``, crashes: a run stopped part way through evaluate."""
    if SUT_LOG.crash_after is not None and len(SUT_LOG.asked) >= SUT_LOG.crash_after:
        raise RuntimeError("SUT crashed")
    SUT_LOG.asked += [item.question for item in items]
    return decoding_sut(items)


def _log_index(passages: list[tuple[str, str]]) -> None:
    """``logging_sut.index``: a SUT asked the question alone is handed the run's passages."""
    SUT_LOG.indexed.append([passage_id for passage_id, _ in passages])


logging_sut.index = _log_index  # type: ignore[attr-defined]


def script() -> PipelineScript:
    return PipelineScript(questions=questions, votes=votes, judge=judge)


def settings_for(base_url: str, **overrides: Any) -> Settings:
    # Scripted replies are short: a small completion cap keeps the spending meter's worst-case
    # reservations (prompt + max_tokens per choice) close to what requests really use.
    spec: dict[str, Any] = {
        "backend": "compatible",
        "base_url": base_url,
        "model": "scripted",
        "max_tokens": 64,
    }
    spec |= overrides.pop("spec", {})
    sut = overrides.pop(
        "sut", {"kind": "callable", "model": "evals.reliability_worker:decoding_sut"}
    )
    values: dict[str, Any] = {
        "generator": LLMSpec(**spec),
        "reasker": LLMSpec(**spec),
        "judge": LLMSpec(**(spec | {"temperature": 0.0})),
        "sut": SUTSpec(**sut),
        "question_mix": "entity=1",  # the pipeline's mechanics, on entity questions
        "coverage_rounds": 0,
        "relations": False,
        "answers_per_context": 1,
        "questions_per_entity": 2,
        "cache_path": "off",
        "probe_judge": False,
        "preflight": False,
        "llm_retries": 1,
        "concurrency": 2,
    }
    return Settings(**(values | overrides))


def request_stats(server: ScriptedLLMServer) -> dict[str, int]:
    bodies = [json.dumps(r.body) for r in server.requests]
    return {
        "requests": len(bodies),
        "generation": sum("Target answer" in body for body in bodies),
    }


def main(argv: list[str] | None = None) -> None:
    from cq2a.app.run import run_pipeline

    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("run_dir")
    parser.add_argument("stats")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args(argv)
    with ScriptedLLMServer(latency_s=args.latency) as server:
        script().install(server.rules)
        summary = run_pipeline(
            args.input, args.run_dir, settings_for(server.base_url), resume=args.resume
        )
        stats = request_stats(server) | {"status": summary.status}
    Path(args.stats).write_text(json.dumps(stats), encoding="utf-8")


if __name__ == "__main__":
    main()
