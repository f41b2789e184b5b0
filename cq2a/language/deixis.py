"""The words by which a question leans on the passage it was written from, as lemmas, per
language: a question that says "the passage", "this reason" or "he" with nothing before it to
point to cannot be answered by someone who holds only the question and a corpus. The check that
reads them off a parse is ``cq2a.checks.rules.question_stands_alone``; another language supplies
its own ``DeixisLexicon``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class DeixisLexicon:
    """Closed classes of one language, as the parser's lower-cased lemmas."""

    #: Nouns that name the text itself ("according to the passage", "the author").
    text_nouns: frozenset[str]
    #: Demonstratives ("this reason", "that year", "what was that").
    demonstratives: frozenset[str]
    #: Third-person personal pronouns, which need an antecedent ("he", "their").
    anaphoric_pronouns: frozenset[str]
    #: Pronouns that may stand for a clause that follows ("how long did it take to ...").
    expletives: frozenset[str]
    #: Definite articles: "the school" names one only where a passage says which.
    definite_articles: frozenset[str]
    #: Nouns with one referent wherever they are read ("the world", "the market").
    unique_nouns: frozenset[str]
    #: Interrogatives: "what document" asks, it does not point; "who ... their" binds "their".
    interrogatives: frozenset[str]
    #: The parser's language-specific tags of superlatives ("the largest library" is one).
    superlative_tags: frozenset[str] = frozenset()
    #: Quotation marks: a quoted term ("what does 'float' mean") is named by the quote.
    quotation_marks: frozenset[str] = frozenset()
    #: Adjectives that place or count a noun rather than say what kind it is: "the main
    #: campus", "the other school", "the new building" need the passage as much as "the
    #: campus" ("the financial crisis", "the ruling class" do not).
    relative_adjectives: frozenset[str] = frozenset()
    #: Whether the language writes an adjective made from a name in lower case ("la cuisine
    #: algérienne"; English capitalises it: "Algerian cuisine").
    lowercase_name_adjectives: bool = False


ENGLISH = DeixisLexicon(
    text_nouns=frozenset(
        "passage text article paragraph author document story excerpt extract context "
        "reading".split()
    ),
    demonstratives=frozenset("this that these those".split()),
    anaphoric_pronouns=frozenset(
        "he him his himself she her hers herself it its itself they them their theirs "
        "themselves".split()
    ),
    expletives=frozenset({"it"}),
    definite_articles=frozenset({"the"}),
    unique_nouns=frozenset("world market economy public dollar".split()),
    interrogatives=frozenset({"who", "what", "which", "whose", "whatever", "whichever"}),
    superlative_tags=frozenset({"JJS", "RBS"}),
    relative_adjectives=frozenset(
        "main first last new old former latter same other next previous following current "
        "original present second third whole entire own particular certain only given above "
        "aforementioned said such many much few several various numerous".split()
    ),
    quotation_marks=frozenset({"'", '"', "\u2018", "\u2019", "\u201c", "\u201d", "``", "''"}),
)

FRENCH = DeixisLexicon(
    text_nouns=frozenset(
        "passage texte article paragraphe auteur autrice document extrait contexte "
        "récit lecture".split()
    ),
    demonstratives=frozenset("ce cet cette ces celui celle ceux celles ceci cela ça".split()),
    anaphoric_pronouns=frozenset("il elle ils elles lui eux leur".split()),
    expletives=frozenset({"il"}),
    definite_articles=frozenset({"le", "la", "les", "l'", "l’"}),
    unique_nouns=frozenset("monde marché économie public".split()),
    interrogatives=frozenset(
        "qui que quoi quel quelle quels quelles lequel laquelle lesquels lesquelles".split()
    ),
    relative_adjectives=frozenset(
        "principal premier dernier nouveau ancien même autre prochain précédent suivant actuel "
        "original présent second deuxième troisième entier propre particulier certain seul "
        "donné susdit tel nombreux plusieurs divers différent".split()
    ),
    quotation_marks=ENGLISH.quotation_marks | frozenset({"«", "»"}),
    lowercase_name_adjectives=True,
)
#: The lexicons by ISO 639-1 code; a language without one is read with English's closed
#: classes, which its questions' words rarely match (the check then passes more than it should).
LEXICONS = {"en": ENGLISH, "fr": FRENCH}


def deixis_for(language: str | None) -> DeixisLexicon:
    """The closed classes of ``language`` (English's for a language without its own)."""
    return LEXICONS.get(language or "en", ENGLISH)
