"""Typed records that flow through a run.

context -> sentences -> answers -> candidate questions -> test cases -> SUT answers -> verdicts.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field, model_validator


class Source(BaseModel):
    """Where a passage was read from: its file (relative to the input folder, or the file's
    name), the page its start is on (PDF), and its character offsets in the document's
    extracted text (``cq2a.documents``)."""

    file: str
    page: int | None = None
    start: int
    end: int

    def label(self) -> str:
        """How a reader sees it: ``policies/leave.pdf p. 3``."""
        return self.file if self.page is None else f"{self.file} p. {self.page}"

    def shifted(self, evidence: Evidence) -> Evidence:
        """A span of the passage as a span of the whole document."""
        return evidence.model_copy(
            update={"start": self.start + evidence.start, "end": self.start + evidence.end}
        )


class Context(BaseModel):
    """One passage to test against. ``extra`` keeps input fields cq2a does not use."""

    id: str
    context: str
    title: str | None = None
    dataset: str | None = None
    human_answers: list[str] = Field(default_factory=list)
    note: str | None = Field(None, description="What input handling did to it, if anything.")
    source: Source | None = Field(None, description="The document it was read from, if any.")
    language: str | None = Field(
        None, description="ISO 639-1 code of its language, given or detected when read."
    )


# ---- parse representation (shared by the Stanza and spaCy backends) ----


class Token(BaseModel):
    """A word with Universal Dependencies annotations; ``head`` is 0 for the root, else 1-based."""

    index: int  # 1-based within the sentence
    text: str
    lemma: str
    upos: str
    xpos: str = ""
    head: int
    deprel: str
    start: int  # character offsets in the context
    end: int
    #: Universal morphological features, "Feat=Value|..." ("Definite=Def|PronType=Art").
    morph: str = ""

    def feature(self, name: str) -> str | None:
        """One morphological feature's value ("Degree" -> "Sup"), None when absent."""
        for pair in self.morph.split("|"):
            key, _, value = pair.partition("=")
            if key == name:
                return value
        return None


class Phrase(BaseModel):
    """A noun or verb phrase as a contiguous run of token indices (1-based, inclusive)."""

    label: Literal["NP", "VP"]
    start: int
    end: int
    #: Token indices removed because they belong to an embedded clause (III-A1).
    clause_tokens: list[int] = Field(default_factory=list)


class EntitySpan(BaseModel):
    """A named entity, date, number or quantity the parser's NER found, as a contiguous run of
    token indices (1-based, inclusive) with its label (OntoNotes: PERSON, GPE, DATE...)."""

    label: str
    start: int
    end: int


class Sentence(BaseModel):
    index: int
    text: str
    start: int
    end: int
    tokens: list[Token]
    phrases: list[Phrase] = Field(default_factory=list)
    entities: list[EntitySpan] = Field(default_factory=list)

    def token(self, index: int) -> Token:
        return self.tokens[index - 1]


class ParsedContext(BaseModel):
    context_id: str
    parser: str
    sentences: list[Sentence]


# ---- answers ----


class AnswerKind(StrEnum):
    """Where an answer comes from. The paper's (III-A): phrases and words of the parse, and
    relations; beside them, the answers people ask about (``cq2a.answers.asked``)."""

    ENTITY_WORD = "entity-word"
    ENTITY_PHRASE = "entity-phrase"
    RELATION = "relation"
    #: A name the parser's NER found: a person, place, organisation, work, event...
    NAMED_ENTITY = "named-entity"
    #: A date, time, number, quantity, amount of money, percentage or ordinal.
    NUMBER = "number"
    #: A base noun phrase: a noun with its determiners, modifiers and compounds.
    NOUN_CHUNK = "noun-chunk"
    #: An adjective that says what kind a noun is ("rounded" arches, "silver" chains).
    MODIFIER = "modifier"
    #: A short clause, the answer to a why or how question.
    CLAUSE = "clause"
    #: "yes" or "no": a question about whether a sentence's statement holds (BoolQ-style).
    YES_NO = "yes-no"
    #: No answer: a question about the context's topic that the context does not answer
    #: (SQuAD 2.0-style); the gold answer is ``UNANSWERABLE``.
    UNANSWERABLE = "unanswerable"
    #: A span whose question needs a second sentence: it names something by a fact only
    #: another sentence states (a bridge).
    MULTI_SENTENCE = "multi-sentence"

    @property
    def question_kind(self) -> QuestionKind:
        """The kind of question asked for an answer of this kind."""
        return QUESTION_KIND_OF.get(self, "entity")

    @property
    def is_entity(self) -> bool:
        """An entity of the context (a word, phrase, name, number, chunk, modifier or clause),
        asked for with an entity question; not a relation, a yes/no, an unanswerable or a
        multi-sentence target."""
        return self.question_kind == "entity"


#: The kinds of question a run asks, in ``question_mix`` order.
QuestionKind = Literal["entity", "relation", "yesno", "unanswerable", "multi_sentence"]
QUESTION_KINDS: tuple[QuestionKind, ...] = (
    "entity",
    "relation",
    "yesno",
    "unanswerable",
    "multi_sentence",
)
QUESTION_KIND_OF: dict[AnswerKind, QuestionKind] = {
    AnswerKind.RELATION: "relation",
    AnswerKind.YES_NO: "yesno",
    AnswerKind.UNANSWERABLE: "unanswerable",
    AnswerKind.MULTI_SENTENCE: "multi_sentence",
}
#: The gold answer of a question the context does not answer, and the canonical abstention.
UNANSWERABLE = "unanswerable"


class Evidence(BaseModel):
    """A span of the context that supports a test's answer, as character offsets and the text
    found there (checked verbatim before a test is accepted)."""

    start: int
    end: int
    text: str

    @classmethod
    def of_sentence(cls, sentence: Sentence) -> Evidence:
        return cls(start=sentence.start, end=sentence.end, text=sentence.text)

    def found_in(self, context: str) -> bool:
        return 0 <= self.start <= self.end <= len(context) and context[self.start : self.end] == (
            self.text
        )


class Triple(BaseModel):
    """A relation triple as its passage writes it (III-A2)."""

    subject: str
    relation: str
    object: str
    proposed: str | None = Field(
        None, description="The relation as the LLM wrote it, where the passage words it otherwise."
    )
    template: str | None = Field(
        None,
        description='"What did E1 do to E2?": the question a relation slot is given once the '
        "generator's question for it was rejected, where the passage writes the relation as an "
        "active finite verb (English passages).",
    )

    def as_text(self) -> str:
        return f"[{self.subject}, {self.relation}, {self.object}]"


class Answer(BaseModel):
    """A gold answer extracted from the context (III-A)."""

    id: str
    context_id: str
    kind: AnswerKind
    text: str
    sentence: str
    sentence_index: int
    start: int | None = Field(None, description="Character span of the answer in the context.")
    end: int | None = None
    lemma: str | None = Field(None, description="Lemma (words) or lemmatised text (phrases).")
    upos: str | None = None
    head_nouns: list[str] = Field(
        default_factory=list, description="Noun lemmas of a phrase, for the leakage check."
    )
    triple: Triple | None = None
    explanation: str | None = Field(None, description="The LLM's reason for a relation triple.")
    evidence: list[Evidence] = Field(
        default_factory=list, description="The sentences of the context that support the answer."
    )
    bridge: str | None = Field(
        None, description="A multi-sentence target's second sentence, which its question uses."
    )
    pivot: str | None = Field(
        None,
        description="What a multi-sentence question names by its second sentence's fact, not by "
        "its name (a name or noun of the answer's sentence, or the answer itself).",
    )
    description: str | None = Field(
        None, description="The pivot named by what the second sentence says of it."
    )


# ---- candidates and their history ----


class CheckResult(BaseModel):
    name: str
    passed: bool
    detail: str = ""


class RejectReason(StrEnum):
    LEXICAL = "lexical_invalid"
    INCOMPLETE = "incomplete"
    LEAK = "answer_leak"
    MISSING_ENTITY = "missing_entity"
    TOO_SHORT = "too_short"
    TOO_LONG = "too_long"
    DUPLICATE = "duplicate"
    INCONSISTENT = "inconsistent_answer"
    WRONG_FORM = "wrong_question_form"
    UNGROUNDED = "ungrounded"
    SINGLE_SENTENCE = "single_sentence"
    FALSE_PREMISE = "false_premise"
    #: The question leans on its passage; checked when the SUT gets the question alone.
    NOT_SELF_CONTAINED = "not_self_contained"
    #: Re-asked over the passages a corpus search finds for it, the question gets another
    #: answer than its gold: it is not answered by its own passage only.
    AMBIGUOUS_IN_CORPUS = "ambiguous_in_corpus"
    EVIDENCE_MISSING = "evidence_not_in_context"
    MALFORMED = "malformed_output"
    NO_QUESTION = "not_generated"
    #: Written by earlier versions; a failed call now leaves the slot pending with its ``error``.
    LLM_ERROR = "llm_error"


class Attempt(BaseModel):
    """One generated question for a slot, and what happened to it."""

    number: int
    question: str
    explanation: str
    checks: list[CheckResult] = Field(default_factory=list)
    raw_votes: list[str] = Field(default_factory=list, description="The re-asker's answers.")
    votes: list[str] = Field(
        default_factory=list, description="Each raw vote as the context span it stands for."
    )
    majority_answer: str | None = None
    majority_count: int = 0
    similarity: float | None = None
    reasons: list[RejectReason] = Field(default_factory=list)
    feedback: str | None = Field(None, description="Feedback this attempt was generated with.")
    template: bool = Field(
        False, description="The question is its relation's template (``Triple.template``)."
    )
    as_generated: str | None = Field(
        None,
        description="A multi-sentence question as the generator wrote it, before its pivot was "
        "named by the second sentence (``cq2a.generation.bridging``).",
    )
    corpus_passages: list[str] = Field(
        default_factory=list,
        description="With a SUT that gets the question alone: the ids of the passages a search "
        "of the run's contexts found for the question, re-asked over together.",
    )
    corpus_votes: list[str] = Field(
        default_factory=list, description="The re-asker's answers over those passages, as spans."
    )
    corpus_answer: str | None = Field(None, description="Their majority answer.")
    corpus_count: int = 0
    corpus_similarity: float | None = None

    @property
    def rejected(self) -> bool:
        return bool(self.reasons)

    @property
    def generated(self) -> bool:
        """Whether the model wrote a question for this attempt (not ``not_generated``)."""
        return bool(self.question.strip())


CandidateStatus = Literal["pending", "accepted", "rejected"]
#: What a slot waits for: a question, its checks, its re-asking, its comparison with the gold
#: answer, or nothing (``done``: accepted or rejected for good).
CandidateStep = Literal["generate", "check", "reask", "compare", "done"]


class Candidate(BaseModel):
    """A question slot for one answer; it keeps every attempt at filling it."""

    id: str
    context_id: str
    answer: Answer
    slot: int
    attempts: list[Attempt] = Field(default_factory=list)
    status: CandidateStatus = "pending"
    error: str | None = Field(
        None,
        description="Why the last LLM call for this slot failed; the slot then waits at the same "
        "step for the next round (or a resume) instead of spending an attempt.",
    )
    next_step: CandidateStep = Field(
        "generate", description="The step the slot waits for; each step sets the next one."
    )

    @model_validator(mode="after")
    def _step_of_an_older_record(self) -> Candidate:
        """A record built without its step (a new slot) or written before ``next_step`` existed
        (an older run's checkpoint, resumed) waits for the step its fields imply."""
        if "next_step" not in self.model_fields_set:
            self.next_step = _implied_step(self)
        return self

    @property
    def current(self) -> Attempt:
        return self.attempts[-1]

    @property
    def reasons(self) -> list[RejectReason]:
        return [reason for attempt in self.attempts for reason in attempt.reasons]


def _implied_step(candidate: Candidate) -> CandidateStep:
    """The step the pipeline took next from these fields before it said so. A slot whose
    generation failed on its last attempt gets ``generate`` too: the check that follows
    generation settles it."""
    if candidate.status != "pending":
        return "done"
    if not candidate.attempts or candidate.current.rejected:
        return "generate"
    if not candidate.current.checks:
        return "check"
    if not candidate.current.votes:
        return "reask"
    return "compare"


class TestCase(BaseModel):
    """An accepted question with its gold answer, ready for the software under test."""

    __test__ = False  # not a pytest class

    id: str
    context_id: str
    context: str
    question: str
    answer: str
    kind: AnswerKind
    sentence: str
    start: int | None = None
    end: int | None = None
    explanation: str
    attempts: int
    template: bool = Field(
        False, description="The question is its relation's template question, not generated."
    )
    as_generated: str | None = Field(
        None,
        description="A multi-sentence question as the generator wrote it, naming what the "
        "question names by its second sentence.",
    )
    votes: list[str]
    similarity: float
    evidence: list[Evidence] = Field(
        default_factory=list, description="Spans of the context that support the answer."
    )
    source: Source | None = Field(None, description="The document its context was read from.")
    language: str = Field("en", description="ISO 639-1 code of its passage's language.")
    document_evidence: list[Evidence] = Field(
        default_factory=list,
        description="The evidence as spans of the source document's extracted text.",
    )


#: Why a retrieval system got a test wrong: its retriever missed the evidence, its reader read
#: the evidence and still answered wrong, or it named no passages to tell.
BugCause = Literal["retrieval_miss", "reader_error", "unknown"]


class JudgeVerdict(BaseModel):
    """Stage 2 of the oracle: the LLM judge's 0-100 score with its reasoning (Table II)."""

    score: int = Field(ge=0, le=100)
    explanation: str


class Verdict(BaseModel):
    """The two-stage oracle's decision for one test case (III-D)."""

    test_id: str
    context_id: str
    question: str
    gold_answer: str
    sut_answer: str = Field(description="The SUT's answer as it gave it.")
    similarity: float
    #: ``rule``: a rule decided before both stages (see ``rule``): the answer was of the wrong
    #: type, a bug; or both the gold and the SUT abstain, a pass;
    #: ``unjudged``: stage 1 said inconsistent and the judge gave no verdict, or the SUT failed
    #: to answer this test's query (see ``judge_explanation``), neither a bug nor a pass.
    stage: Literal["rule", "similarity", "judge", "unjudged"]
    rule: str | None = None
    judge_score: int | None = Field(None, description="The median of the judge's votes.")
    judge_scores: list[int] = Field(default_factory=list, description="Every vote's score.")
    judge_confident: bool | None = Field(
        None, description="Whether the judge's votes agree (all on one side of its threshold)."
    )
    judge_explanation: str | None = None
    bug: bool
    kind: AnswerKind
    sut_input_truncated: bool = Field(
        False, description="The SUT's input was cut to fit its window: it never saw all of it."
    )
    retrieved_contexts: list[str] | None = Field(
        None,
        description="The passages the SUT retrieved (each cut); None: it named none.",
    )
    evidence_retrieved: bool | None = Field(
        None, description="Whether the test's evidence was among them (cq2a.oracle.attribution)."
    )
    cause: BugCause | None = Field(
        None, description="A bug's cause when the SUT retrieves its own passages; else None."
    )
    source: Source | None = Field(None, description="The document its test was made from.")
    language: str = Field("en", description="ISO 639-1 code of its passage's language.")


class ContextPlan(BaseModel):
    """What a context can be asked about, and how far its coverage rounds went: every target
    (``pool``, best first within each kind), the character offsets of its sentences, and the
    rounds of extra answers given so far (``cq2a.coverage.steering``)."""

    id: str
    pool: list[Answer] = Field(default_factory=list)
    sentence_spans: list[tuple[int, int]] = Field(default_factory=list)
    coverage_rounds: int = 0
    dropped_triples: list[str] = Field(
        default_factory=list, description="Why each proposed relation triple was dropped (III-A2)."
    )
    cut_back: dict[str, str] = Field(
        default_factory=dict,
        description="Question kinds that took no more slots in the coverage rounds, and why "
        "(cq2a.coverage.steering.cut_back).",
    )


class Skip(BaseModel):
    """A context (or input line) that was not processed, and why."""

    id: str
    reason: str
    detail: str = ""
