"""Bad input gets a recorded skip or a clear error, and the rest of the input goes on."""

import json

import pytest

from cq2a.app.inputs import InputError, read_contexts

GOOD = "The Normans were the people who gave their name to Normandy, a region in France."


def write_lines(tmp_path, lines, name="in.jsonl"):
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def record(id_, context):
    return json.dumps({"id": id_, "context": context}).encode()


def reasons(skips):
    return {skip.id: skip.reason for skip in skips}


def test_bad_input_empty_and_punctuation_only(tmp_path):
    path = write_lines(tmp_path, [record("a", ""), record("b", " ?!... "), record("c", GOOD)])
    contexts, skips = read_contexts(path, 20_000)
    assert [c.id for c in contexts] == ["c"]
    assert reasons(skips) == {"a": "empty_context", "b": "empty_context"}


def test_bad_input_invalid_json_and_missing_context(tmp_path):
    lines = [b"{not json", json.dumps({"id": "m", "text": GOOD}).encode(), record("ok", GOOD)]
    contexts, skips = read_contexts(write_lines(tmp_path, lines), 20_000)
    assert [c.id for c in contexts] == ["ok"]
    assert reasons(skips) == {"line 1": "invalid_json", "m": "missing_context"}


def test_bad_input_invalid_utf8(tmp_path):
    lines = [b'{"id": "x", "context": "caf\xe9 au lait"}', record("ok", GOOD)]
    contexts, skips = read_contexts(write_lines(tmp_path, lines), 20_000)
    assert [c.id for c in contexts] == ["ok"]
    assert reasons(skips) == {"line 1": "invalid_utf8"}


def test_bad_input_duplicate_ids_keep_the_first(tmp_path):
    lines = [record("d", GOOD), record("d", GOOD + " Again."), record("e", GOOD)]
    contexts, skips = read_contexts(write_lines(tmp_path, lines), 20_000)
    assert [c.id for c in contexts] == ["d", "e"]
    assert contexts[0].context == GOOD
    assert reasons(skips) == {"d": "duplicate_id"}


def test_bad_input_control_characters_are_replaced_and_noted(tmp_path):
    lines = [record("k", "The Normans\x00 gave\x07 their name to Normandy, a region in France.")]
    contexts, skips = read_contexts(write_lines(tmp_path, lines), 20_000)
    assert skips == []
    assert "\x00" not in contexts[0].context and "\x07" not in contexts[0].context
    assert "control characters" in contexts[0].note


def test_bad_input_oversize_context_is_truncated_at_a_sentence(tmp_path):
    long_text = " ".join([GOOD] * 50)
    contexts, _ = read_contexts(write_lines(tmp_path, [record("l", long_text)]), 1_000)
    assert len(contexts[0].context) <= 1_000
    assert contexts[0].context.endswith(".")
    assert "truncated from" in contexts[0].note


GERMAN = (
    "Die Normannen waren die Menschen, die im zehnten und elften Jahrhundert der Normandie "
    "ihren Namen gaben, einer Region in Frankreich. Sie stammten von Wikingern ab."
)
FRENCH = (
    "Les Normands sont les habitants qui, aux Xe et XIe siècles, ont donné leur nom à la "
    "Normandie, une région de France. Ils descendaient de pillards vikings."
)
ENGLISH = (
    "The Normans were the people who in the 10th and 11th centuries gave their name to "
    "Normandy, a region in France. They were descended from Norse raiders."
)


def test_a_context_in_a_language_the_run_does_not_read_is_skipped_saying_how(tmp_path):
    contexts, skips = read_contexts(write_lines(tmp_path, [record("g", GERMAN)]), 20_000)
    assert contexts == []
    assert reasons(skips) == {"g": "unsupported_language"}
    assert "German (de)" in skips[0].detail and "--languages" in skips[0].detail


def test_each_context_gets_its_own_language_in_a_mixed_input(tmp_path):
    lines = [record("e", ENGLISH), record("f", FRENCH)]
    contexts, skips = read_contexts(write_lines(tmp_path, lines), 20_000)
    assert skips == []
    assert {c.id: c.language for c in contexts} == {"e": "en", "f": "fr"}


def test_a_given_language_is_not_detected_and_others_are_skipped(tmp_path):
    lines = [record("e", ENGLISH), record("f", FRENCH)]
    contexts, skips = read_contexts(write_lines(tmp_path, lines), 20_000, languages=("fr",))
    assert [(c.id, c.language) for c in contexts] == [("e", "fr"), ("f", "fr")]
    contexts, skips = read_contexts(write_lines(tmp_path, lines), 20_000, languages=("de", "fr"))
    assert [c.id for c in contexts] == ["f"] and reasons(skips) == {"e": "unsupported_language"}


def test_a_record_language_field_wins_over_detection(tmp_path):
    line = json.dumps({"id": "x", "context": ENGLISH, "language": "FR"}).encode()
    contexts, _ = read_contexts(write_lines(tmp_path, [line]), 20_000)
    assert contexts[0].language == "fr"


def test_bad_input_unreadable_path(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_contexts(tmp_path / "missing.jsonl", 20_000)
    with pytest.raises(InputError, match="not found"):
        read_contexts(tmp_path / "missing.txt", 20_000)
    with pytest.raises(InputError, match="no files in"):
        read_contexts(tmp_path, 20_000)  # a folder is read for documents; this one has none


def test_text_input_one_context_per_line(tmp_path):
    path = tmp_path / "in.lines"  # a .txt file is a document (tests/test_documents_corpus.py)
    path.write_text(f"{GOOD}\n\n{GOOD} Second.\n", encoding="utf-8")
    contexts, skips = read_contexts(path, 20_000)
    assert [c.id for c in contexts] == ["line1", "line3"]
    assert skips == []


def test_shipped_sample_reads_cleanly():
    from cq2a.cli import demo_input

    contexts, skips = read_contexts(demo_input(), 20_000)
    assert len(contexts) == 93 and skips == []
    assert contexts[0].human_answers


def test_bad_input_sentence_of_1000_tokens_is_left_out_of_extraction():
    from cq2a.answers.entities import extract_entities
    from cq2a.answers.plan import drop_long_sentences
    from cq2a.language.parsing import get_parser
    from cq2a.models.records import Context

    long_sentence = "The Normans met " + ", ".join(["the Franks"] * 400) + " in the north."
    context = Context(id="long", context=f"{GOOD} {long_sentence}")
    parsed = get_parser("spacy").parse(context)
    assert max(len(s.tokens) for s in parsed.sentences) > 1000
    kept, left_out = drop_long_sentences(parsed, max_tokens=400)
    assert [len(s.tokens) > 1000 for s in left_out] == [True]
    assert kept.sentences and all(len(s.tokens) <= 400 for s in kept.sentences)
    answers = extract_entities(kept, context)
    assert answers and all(a.start < len(GOOD) for a in answers)
