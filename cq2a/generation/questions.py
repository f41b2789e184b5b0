"""Answer-targeted question generation (III-B) and the loop back with feedback.

Each answer owns a fixed number of question slots (5 for entities, 10 for relations, Table I).
A round (``generation_round``) sends one request per answer for all of its slots waiting for a
question; a slot whose question was rejected waits again, and is filled with the rejection
reasons in the prompt, until it runs out of attempts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, Field

from cq2a.adapters.fanout import parallel_map
from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.errors import LLMCallFailed
from cq2a.adapters.llm.prompts import own_prompt, render_prompt, system_prompt
from cq2a.adapters.llm.structured import Malformed, Until
from cq2a.language.lemmas import Lemmatizer
from cq2a.language.lexicon import BLANK
from cq2a.models.candidates import at_step, settle
from cq2a.models.records import Answer, AnswerKind, Attempt, Candidate, Context, RejectReason


class GeneratedQuestion(BaseModel):
    question: str = Field(description="A natural question whose answer is the target")
    explanation: str = Field(description="Why the target answers the question")


class GeneratedQuestions(BaseModel):
    """The structured output of both question generation prompts (Table I)."""

    questions: list[GeneratedQuestion] = Field(default_factory=list)


#: Whether an explanation (as far as it is written) is all a check reads of it, per answer.
Explained = Callable[[Answer], Callable[[str], bool]]


def until_explained(count: int, explained: Callable[[str], bool]) -> Until:
    """Stop a generation request once it has written its ``count`` questions and the last
    one's explanation is ``explained``: the question is whole (its explanation has begun, and
    the schema writes the question first) and the explanation holds what its check reads (the
    target, for Completeness). Every earlier explanation was written whole before the next
    question began. The rest of an explanation changes no check and is not written."""

    def enough(output: dict[str, Any]) -> bool:
        questions = output.get("questions")
        if not isinstance(questions, list) or len(questions) < count:
            return False
        last = questions[count - 1]
        if not isinstance(last, dict) or list(last)[-2:] != ["question", "explanation"]:
            return False
        return isinstance(last["explanation"], str) and explained(last["explanation"])

    return Until(name=f"explained:{count}", enough=enough)


def slots_per_answer(answer: Answer, per_entity: int, per_relation: int) -> int:
    return per_relation if answer.kind is AnswerKind.RELATION else per_entity


def new_slots(answer: Answer, count: int) -> list[Candidate]:
    return [
        Candidate(id=f"{answer.id}:q{slot}", context_id=answer.context_id, answer=answer, slot=slot)
        for slot in range(count)
    ]


def slots_for_new_answers(
    answers: Sequence[Answer], candidates: Sequence[Candidate], per_entity: int, per_relation: int
) -> list[Candidate]:
    """The question slots of answers that have none yet (Table I: 5 per entity, 10 per
    relation)."""
    slotted = {c.answer.id for c in candidates}
    return [
        slot
        for answer in answers
        if answer.id not in slotted
        for slot in new_slots(answer, slots_per_answer(answer, per_entity, per_relation))
    ]


def feedback_for(slots: list[Candidate]) -> str:
    """The rejected questions of these slots with their reasons, for the next prompt."""
    items = []
    for slot in slots:
        if not slot.attempts or not slot.current.rejected:
            continue
        attempt = slot.current
        notes = [check.detail for check in attempt.checks if not check.passed]
        if RejectReason.INCONSISTENT in attempt.reasons and attempt.majority_answer:
            # what the question really asks for, so the next one can aim at the target
            notes.append(
                f'it was answered with "{attempt.majority_answer}", not "{slot.answer.text}"'
            )
        if RejectReason.AMBIGUOUS_IN_CORPUS in attempt.reasons and attempt.corpus_answer:
            # another passage answers it: the next question must name what sets its own apart
            notes.append(
                f'over the whole corpus it was answered with "{attempt.corpus_answer}" '
                f"(from {', '.join(attempt.corpus_passages)}): name what sets this passage apart"
            )
        details = "; ".join(notes)
        reasons = ", ".join(reason.value for reason in attempt.reasons)
        question = attempt.question or "(no question was produced)"
        items.append(f'- "{question}" was rejected: {reasons}{f" ({details})" if details else ""}')
    if not items:
        return ""
    return render_prompt("feedback", items="\n".join(items))


def blank_out(sentence: str, answer: str) -> str:
    """The sentence with the target replaced by a blank: a small model asked to "ask for the
    blank" targets it far more often than one shown the sentence whole (III-B)."""
    at = sentence.find(answer)
    if at < 0:
        return sentence
    return f"{sentence[:at]}{BLANK}{sentence[at + len(answer) :]}"


def blank_span(answer: Answer) -> str:
    """The answer's sentence with the answer's own span (its character offsets) blanked, else
    its first occurrence: a relation's verb where the triple was read ("They were _____ from
    Norse raiders")."""
    sentence = answer.evidence[0] if answer.evidence else None
    if sentence is None or answer.start is None or answer.end is None:
        return blank_out(answer.sentence, answer.text)
    start, end = answer.start - sentence.start, answer.end - sentence.start
    if not 0 <= start < end <= len(sentence.text):
        return blank_out(answer.sentence, answer.text)
    return f"{sentence.text[:start]}{BLANK}{sentence.text[end:]}"


def generation_messages(
    answer: Answer, context: Context, count: int, feedback: str, standalone: bool = False
) -> tuple[str, str]:
    """System and user messages; the context comes first so servers can reuse the prefix.
    The system prompt is the context's language's (``system_prompt``). ``standalone``: the
    questions will be asked without their passage, and the system message says so
    (``prompts/standalone_requirement.txt``, or the language's own: ``prompts/fr/``)."""
    name, user = _kind_messages(answer, context, count, feedback)
    system = system_prompt(f"{name}.system", context.language)
    if standalone:
        system = f"{system}\n\n{own_prompt('standalone_requirement', context.language)}"
    return system, user


#: The generation prompts, whose examples a small model may copy from.
GENERATION_PROMPTS = (
    "entity_questions",
    "relation_questions",
    "yesno_questions",
    "unanswerable_questions",
    "multi_sentence_questions",
)


@cache
def example_names(language: str | None, lemmatize: Lemmatizer) -> frozenset[str]:
    """The names (proper nouns' lemmas, as ``lemmatize`` tags them) that the examples of the
    generation prompts for ``language`` use: "Rollon" of the French examples' Normans. A
    question that names one its passage never mentions copied it from the example. Words
    the prompts also write in lower case ("passage", "explanation") are no names."""
    texts = [system_prompt(f"{name}.system", language) for name in GENERATION_PROMPTS]
    common = {word for text in texts for word in re.findall(r"\w+", text) if word.islower()}
    return frozenset(
        lemma.lower()
        for text in texts
        for lemma, tag in lemmatize(text)
        if tag == "PROPN" and lemma.isalpha() and lemma.lower() not in common
    )


def _kind_messages(answer: Answer, context: Context, count: int, feedback: str) -> tuple[str, str]:
    """The name of the kind's prompt, and its user message."""
    if answer.kind is AnswerKind.RELATION:
        assert answer.triple is not None
        return "relation_questions", render_prompt(
            "relation_questions.user",
            context=context.context,
            triple=answer.triple.as_text(),
            cloze=blank_span(answer),
            feedback=feedback,
            count=count,
            answer=answer.text,
        )
    if answer.kind.is_entity:
        return "entity_questions", render_prompt(
            "entity_questions.user",
            context=context.context,
            cloze=blank_out(answer.sentence, answer.text),
            feedback=feedback,
            count=count,
            answer=answer.text,
        )
    # yes/no, unanswerable and multi-sentence questions (cq2a.answers.kinds): one prompt file each
    name = f"{answer.kind.question_kind}_questions"
    return name, render_prompt(
        f"{name}.user",
        context=context.context,
        sentence=answer.sentence,
        cloze=blank_out(answer.sentence, answer.text),
        pivot=answer.pivot or "",
        feedback=feedback,
        count=count,
        answer=answer.text,
    )


def fill_slots(
    slots: list[Candidate], output: GeneratedQuestions | Malformed, feedback: str
) -> list[Candidate]:
    """Give each slot its next attempt from the generated questions, in order."""
    questions = output.questions if isinstance(output, GeneratedQuestions) else []
    filled = []
    for index, slot in enumerate(slots):
        number = len(slot.attempts) + 1
        if index < len(questions):
            generated = questions[index]
            attempt = Attempt(
                number=number,
                question=generated.question.strip(),
                explanation=generated.explanation.strip(),
                feedback=feedback or None,
            )
        else:
            attempt = Attempt(
                number=number,
                question="",
                explanation=_failure_detail(output),
                reasons=[_failure_reason(output)],
                feedback=feedback or None,
            )
        filled.append(
            slot.model_copy(update={"attempts": [*slot.attempts, attempt], "error": None})
        )
    return filled


def _failure_reason(output: object) -> RejectReason:
    return RejectReason.MALFORMED if isinstance(output, Malformed) else RejectReason.NO_QUESTION


def _failure_detail(output: object) -> str:
    if isinstance(output, Malformed):
        return f"malformed output: {output.error}"
    return "the model returned fewer questions than asked"


def template_attempt(slot: Candidate) -> Candidate:
    """The slot's next attempt is its relation's template question (``Triple.template``), with
    the triple as its explanation, as the passage writes it."""
    triple = slot.answer.triple
    assert triple is not None and triple.template is not None
    attempt = Attempt(
        number=len(slot.attempts) + 1,
        question=triple.template,
        explanation=f"The passage says that {triple.subject} {triple.relation} {triple.object}. "
        f"Triple: {triple.as_text()}.",
        template=True,
    )
    return slot.model_copy(update={"attempts": [*slot.attempts, attempt], "error": None})


def takes_template(answer: Answer, slots: list[Candidate], asked: frozenset[str]) -> int | None:
    """Which waiting slot of a relation answer gets the template question: the first one whose
    generated question was rejected, while no slot of the answer has been given the template
    yet (``asked``: every question its slots were given). The 1.5B generator names the
    relation's verb or drops an entity in most relation questions (evals/README.md); the
    template asks for the relation without either."""
    template = answer.triple.template if answer.triple else None
    if template is None or template in asked:
        return None
    for index, slot in enumerate(slots):
        if slot.attempts and slot.current.rejected:
            return index
    return None


def generate_questions(
    client: ChatClient,
    answer: Answer,
    context: Context,
    slots: list[Candidate],
    seed_offset: int,
    standalone: bool = False,
    asked: frozenset[str] = frozenset(),
    explained: Explained | None = None,
) -> list[Candidate]:
    """One generation request for the slots of one answer (III-B); a relation slot whose
    question was rejected may get the template instead (``takes_template``). ``explained``:
    the request stops once its last explanation holds what the explanation check reads
    (``until_explained``).

    A failed call spends no attempt: the slots keep the error and are asked for again in the
    next round, or by ``--resume`` / ``--retry-errors``."""
    templated = takes_template(answer, slots, asked)
    if templated is not None:
        assert answer.triple is not None and answer.triple.template is not None
        rest = [slot for index, slot in enumerate(slots) if index != templated]
        generated = generate_questions(
            client,
            answer,
            context,
            rest,
            seed_offset,
            standalone,
            asked | {answer.triple.template},
            explained,
        )
        generated.insert(templated, template_attempt(slots[templated]))
        return generated
    if not slots:
        return []
    feedback = feedback_for(slots)
    system, user = generation_messages(answer, context, len(slots), feedback, standalone)
    until = until_explained(len(slots), explained(answer)) if explained is not None else None
    try:
        outputs = client.structured(
            system,
            user,
            GeneratedQuestions,
            seed_offset=seed_offset,
            max_items=len(slots),
            until=until,
        )
    except LLMCallFailed as error:
        return [slot.model_copy(update={"error": str(error)}) for slot in slots]
    return fill_slots(slots, outputs[0], feedback)


def after_generation(slot: Candidate, max_attempts: int) -> Candidate:
    """A slot given a question goes on to its checks. One whose call failed spent no attempt
    and waits at generate; one the model wrote no question for (malformed or too few) spent
    one and is settled like any rejection."""
    if slot.error is not None:
        return slot
    if slot.current.rejected:
        return settle(slot, max_attempts)
    return slot.model_copy(update={"next_step": "check"})


@dataclass(frozen=True, kw_only=True)
class GenerationLimits:
    """What ``generation_round`` reads from a run's settings."""

    #: Question slots per entity answer and per relation (Table I).
    questions_per_entity: int
    questions_per_relation: int
    #: Generation attempts per slot.
    max_attempts: int
    #: Concurrent requests.
    concurrency: int
    #: The questions will be asked without their passage (``sut.input == "question"``).
    standalone_questions: bool = False


def generation_round(
    client: ChatClient,
    context: Context,
    answers: Sequence[Answer],
    candidates: Sequence[Candidate],
    limits: GenerationLimits,
    explained: Explained | None = None,
) -> list[Candidate]:
    """Fill every slot waiting for a question: new answers' slots, and rejected slots again;
    one request per answer, for all of its waiting slots (stopped once explained, given
    ``explained``). Returns the slots it asked for."""
    new = slots_for_new_answers(
        answers, candidates, limits.questions_per_entity, limits.questions_per_relation
    )
    by_answer: dict[str, list[Candidate]] = {}
    for slot in at_step([*candidates, *new], "generate"):
        by_answer.setdefault(slot.answer.id, []).append(slot)

    asked: dict[str, set[str]] = {}
    for candidate in candidates:
        asked.setdefault(candidate.answer.id, set()).update(
            attempt.question for attempt in candidate.attempts
        )

    def ask(slots: list[Candidate]) -> list[Candidate]:
        first = slots[0]
        return generate_questions(
            client,
            first.answer,
            context,
            slots,
            seed_offset=len(first.attempts),
            standalone=limits.standalone_questions,
            asked=frozenset(asked.get(first.answer.id, ())),
            explained=explained,
        )

    filled = parallel_map(ask, list(by_answer.values()), limits.concurrency)
    return [after_generation(slot, limits.max_attempts) for slots in filled for slot in slots]
