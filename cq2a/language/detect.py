"""Which language a passage is written in, among the languages a run can parse.

Detection uses lingua (``lingua-language-detector``), restricted to the run's languages plus a
few common ones it cannot parse: a detector over every language reads an English passage full of
Latin names ("the Raoulii were descended from an Italo-Norman named Raoul") as Latin, while a
passage in a language the run does not parse must still be told apart from the ones it does.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lingua import LanguageDetector

#: Languages recognised only to be refused when a run does not parse them (Latin and other
#: scripts included), so that they are not read as the nearest parsed language.
SCREENED = ("en", "fr", "de", "es", "it", "nl", "pt", "ru", "zh", "ja", "ko", "ar", "el", "hi")
#: Passages shorter than this many letters carry too little to detect: they take the run's
#: first language.
MIN_LETTERS = 20

NAMES = {
    "en": "English",
    "fr": "French",
    "de": "German",
    "es": "Spanish",
    "it": "Italian",
    "nl": "Dutch",
    "pt": "Portuguese",
    "ru": "Russian",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "ar": "Arabic",
    "el": "Greek",
    "hi": "Hindi",
}


def language_name(code: str) -> str:
    """The English name of an ISO 639-1 code, for messages and prompts ("fr" -> "French")."""
    if code in NAMES:
        return NAMES[code]
    from lingua import IsoCode639_1, Language

    try:
        language = Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper()))
    except AttributeError:
        return code
    return language.name.title()


@cache
def _detector(codes: tuple[str, ...]) -> LanguageDetector:
    from lingua import IsoCode639_1, LanguageDetectorBuilder

    return LanguageDetectorBuilder.from_iso_codes_639_1(
        *(getattr(IsoCode639_1, code.upper()) for code in codes)
    ).build()


def _screened(languages: Sequence[str]) -> tuple[str, ...]:
    """``languages`` and the screened ones, those lingua knows (it detects 75; a run's
    language outside them is only ever given)."""
    from lingua import IsoCode639_1

    return tuple(
        c for c in dict.fromkeys([*languages, *SCREENED]) if hasattr(IsoCode639_1, c.upper())
    )


def detect_language(text: str, languages: Sequence[str]) -> str:
    """The ISO 639-1 code of ``text``'s language: one of ``languages`` (the first when the text
    is too short to tell or only one is given), or a screened language the run does not parse."""
    if len(languages) == 1 or sum(ch.isalpha() for ch in text) < MIN_LETTERS:
        return languages[0]
    found = _detector(_screened(languages)).detect_language_of(text)
    return found.iso_code_639_1.name.lower() if found is not None else languages[0]


def language_confidence(text: str, language: str) -> tuple[float, str]:
    """How sure lingua is that ``text`` is in ``language`` (0 to 1), weighed against the
    screened languages, and the language it finds likeliest: ``(1.0, language)`` for a text too
    short to tell or a language lingua does not know."""
    from lingua import IsoCode639_1

    if sum(ch.isalpha() for ch in text) < MIN_LETTERS or not hasattr(
        IsoCode639_1, language.upper()
    ):
        return 1.0, language
    values = _detector(_screened([language])).compute_language_confidence_values(text)
    found = {v.language.iso_code_639_1.name.lower(): v.value for v in values}
    likeliest = max(found, key=found.__getitem__) if found else language
    return found.get(language, 0.0), likeliest
