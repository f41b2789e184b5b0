"""The one registry of what a run uses: its LLM clients, embedder, parser and SUT.

Per run (keyed by settings and the run's thread id): the LLM clients with their cache and
spending meter, so two runs never share a meter (unless ``share_meter`` gives a run's processes
one meter in its store). Per process: the parser, the embedder and the
SUT, which are the same for every run with the same spec, so a long-lived ``langgraph dev``
server loads each once however many threads it serves. ``release_services`` ends a run's share.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

from cq2a.adapters.llm.breaker import reset_breakers
from cq2a.adapters.llm.choices import forget_n_support
from cq2a.adapters.llm.roles import LLMRuntime, build_llm_runtime
from cq2a.adapters.llm.usage import SpendingMeter
from cq2a.adapters.sut import build_sut
from cq2a.adapters.sut.chat import sut_chat_model
from cq2a.adapters.sut.rag import read_corpus
from cq2a.language.embeddings import default_threshold, load_embedder
from cq2a.language.parsing import get_parser, lemmatizer, question_parser
from cq2a.language.retrieval import PassageIndex
from cq2a.models.records import Context
from cq2a.settings import ParserBackend, Settings, SUTSpec


@dataclass(frozen=True)
class LanguageServices:
    """What a step needs that depends on the passage's language: its parser (and the
    lemmatizer and question parser over it), its embedder and the thresholds calibrated for
    that embedder (unless the settings fix them). Each model is loaded on first use."""

    language: str
    backend: ParserBackend
    embedding_model: str
    consistency_threshold: float
    oracle_threshold: float

    @property
    def parser(self) -> Any:
        return get_parser(self.backend, self.language)

    @property
    def lemmatize(self) -> Any:
        return _shared_lemmatizer(self.backend, self.language)

    @property
    def parse_question(self) -> Any:
        return _shared_question_parser(self.backend, self.language)

    @property
    def embedder(self) -> Any:
        return load_embedder(self.embedding_model)


@dataclass
class Services:
    settings: Settings
    run_key: str = "default"
    #: The run's contexts as one searchable corpus (``index_corpus``), for the re-ask over the
    #: corpus when the SUT gets the question alone.
    corpus: PassageIndex | None = None
    #: The spending meter the LLM clients count against (``share_meter``); None: their own.
    meter: SpendingMeter | None = None
    _corpus_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _sut_indexed: bool = field(default=False, repr=False)

    def index_corpus(self, contexts: Sequence[Context]) -> PassageIndex:
        """Index the run's contexts as its corpus, beside the passages of ``sut.corpus`` (the
        same corpus a built-in retrieval SUT searches, so a question another passage of it
        answers is caught before it becomes a false retrieval bug), and keep the index for the
        run's nodes."""
        extra = read_corpus(self.settings.sut.corpus) if self.settings.sut.corpus else []
        own = [(context.id, context.context) for context in contexts]
        self.corpus = PassageIndex(list({**dict(extra), **dict(own)}.items()))
        return self.corpus

    def corpus_index(self, contexts: Callable[[], Sequence[Context]]) -> PassageIndex:
        """The run's corpus index, built once from ``contexts()`` when the run has none yet (a
        resumed run): the contexts that resume at once wait for one build, not one each."""
        with self._corpus_lock:
            if self.corpus is None:
                self.index_corpus(contexts())
            assert self.corpus is not None
            return self.corpus

    def claim_sut_index(self) -> bool:
        """True the first time this run asks: its first evaluate hands the SUT the run's
        corpus, and the later chunks search the index that built (a BM25 index or a callable's
        ``index`` is not rebuilt for each chunk)."""
        with self._corpus_lock:
            first, self._sut_indexed = not self._sut_indexed, True
            return first

    @cached_property
    def llm(self) -> LLMRuntime:
        return build_llm_runtime(self.settings, self.run_key, self.meter)

    def speaking(self, language: str | None) -> LanguageServices:
        """The parser, embedder and thresholds of ``language`` (ISO 639-1; None: English).
        English uses the run's ``parser`` and ``embedding_model``; any other language the
        parser backend's model for it and ``multilingual_embedding_model``."""
        code = language or "en"
        model = self.settings.embedding_model
        if code != "en":
            model = self.settings.multilingual_embedding_model
        chosen = self.settings.consistency_threshold, self.settings.oracle_threshold
        consistency, oracle = (default_threshold(model) if t is None else t for t in chosen)
        return LanguageServices(
            language=code,
            backend=self.settings.parser,
            embedding_model=model,
            consistency_threshold=consistency,
            oracle_threshold=oracle,
        )

    @property
    def default_language(self) -> str:
        """The language of a step given no passage's: the run's fixed one, else English."""
        return "en" if self.settings.language == "auto" else self.settings.language

    @cached_property
    def _default(self) -> LanguageServices:
        return self.speaking(self.default_language)

    @property
    def embedder(self) -> Any:
        return self._default.embedder

    @property
    def parser(self) -> Any:
        return self._default.parser

    @property
    def lemmatize(self) -> Any:
        return self._default.lemmatize

    @property
    def parse_question(self) -> Any:
        """The parser over one question (``question_parser``), shared like the lemmatizer."""
        return self._default.parse_question

    @property
    def sut(self) -> Any:
        spec = self.settings.sut
        secret = spec.api_key.get_secret_value() if spec.api_key else ""
        return _shared_sut(spec.model_dump_json(), secret, self.settings.local_slots)

    def close(self) -> None:
        """Close this run's LLM cache, if its clients were ever built, and its meter."""
        runtime = self.__dict__.get("llm")
        if runtime is not None and runtime.cache is not None:
            runtime.cache.close()
        meter = runtime.meter if runtime is not None else self.meter
        if meter is not None:
            meter.close()

    @property
    def consistency_threshold(self) -> float:
        return self._default.consistency_threshold

    @property
    def oracle_threshold(self) -> float:
        return self._default.oracle_threshold


@cache
def _shared_lemmatizer(backend: str, language: str) -> Any:

    return lemmatizer(get_parser(backend, language))  # type: ignore[arg-type]


@cache
def _shared_question_parser(backend: str, language: str) -> Any:
    return question_parser(get_parser(backend, language))  # type: ignore[arg-type]


@cache
def _shared_sut(spec_json: str, api_key: str, local_slots: int) -> Any:
    from functools import partial

    spec = SUTSpec.model_validate_json(spec_json)
    if api_key:
        spec = spec.model_copy(update={"api_key": api_key})
    return build_sut(spec, chat_factory=partial(sut_chat_model, local_slots=local_slots))


_SERVICES: dict[tuple[str, str], Services] = {}
_SERVICES_LOCK = threading.Lock()


def services_for(settings: Settings | None, run_key: str = "default") -> Services:
    """The services of one run; built on first use, shared by every node of that run."""
    settings = settings or Settings()
    key = (settings.model_dump_json(), run_key)
    with _SERVICES_LOCK:
        if key not in _SERVICES:
            _SERVICES[key] = Services(settings, run_key)
        return _SERVICES[key]


def share_meter(settings: Settings, run_key: str, meter: SpendingMeter) -> Services:
    """The run's services, their LLM clients to count against ``meter`` rather than a meter of
    their own: one that the run's other processes count against too. Only before the clients
    are built, since each client holds the meter it was built with."""
    services = services_for(settings, run_key)
    if "llm" in services.__dict__ and services.llm.meter is not meter:
        raise RuntimeError(f"run {run_key}'s LLM clients already count against another meter")
    services.meter = meter
    return services


def release_services(run_key: str | None = None) -> None:
    """End one run's share (or every run's, with no key): close its cache, drop its meter,
    clients and LLM breakers; with no key, also forget which servers honour ``n``."""

    with _SERVICES_LOCK:
        for key in [k for k in _SERVICES if run_key is None or k[1] == run_key]:
            _SERVICES.pop(key).close()
    reset_breakers(run_key)
    if run_key is None:
        forget_n_support()
