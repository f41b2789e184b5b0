"""A folder, a glob or a file of documents as contexts: sources, stable ids, duplicate
passages and unreadable files as skips, and a clear error when nothing can be read."""

from __future__ import annotations

import pytest

from cq2a.app.inputs import InputError, read_contexts
from cq2a.models.records import Context, Skip
from tests.document_files import (
    NORMANS,
    write_encrypted_pdf,
    write_image_only_pdf,
    write_pdf,
)

RHINE = (
    "The Rhine flows from the Swiss Alps to the North Sea. "
    "Rotterdam lies near its mouth in the Netherlands. "
    "Barges carry coal and grain along the river."
)
CURIE = (
    "Marie Curie received the Nobel Prize in Physics in 1903. "
    "She later won a second prize in Chemistry. "
    "Her laboratory was in Paris."
)
NOTICE = "All rights reserved by the Normandy Historical Society and its members."


def folder(tmp_path):
    root = tmp_path / "docs"
    (root / "rivers").mkdir(parents=True)
    (root / "normans.txt").write_text(NORMANS, encoding="utf-8")
    (root / "rivers" / "rhine.md").write_text(f"# The Rhine\n\n{RHINE}\n", encoding="utf-8")
    (root / "curie.html").write_text(f"<html><body><p>{CURIE}</p></body></html>", "utf-8")
    return root


def test_a_folder_is_read_recursively_with_each_passage_sourced(tmp_path):
    root = folder(tmp_path)
    contexts, skips = read_contexts(root, 20_000, 120)
    assert skips == []
    assert {c.source.file for c in contexts} == {"normans.txt", "rivers/rhine.md", "curie.html"}
    for context in contexts:
        assert len(context.context) <= 120
        assert context.id.startswith(f"{context.source.file}#")
        assert context.source.end - context.source.start == len(context.context)


def test_a_glob_and_a_single_file_name_their_files(tmp_path):
    root = folder(tmp_path)
    contexts, _ = read_contexts(f"{root}/**/*.md", 20_000, 1200)
    assert {c.source.file for c in contexts} == {"rivers/rhine.md"}
    contexts, _ = read_contexts(root / "normans.txt", 20_000, 1200)
    assert [(c.source.file, c.source.start) for c in contexts] == [("normans.txt", 0)]
    assert contexts[0].context == NORMANS


def test_editing_one_document_leaves_the_other_documents_ids_alone(tmp_path):
    root = folder(tmp_path)
    before, _ = read_contexts(root, 20_000, 120)
    (root / "normans.txt").write_text("Preface added here. " + NORMANS + " New end.", "utf-8")
    after, _ = read_contexts(root, 20_000, 120)

    def ids(contexts: list[Context], changed: bool) -> set[str]:
        return {c.id for c in contexts if (c.source.file == "normans.txt") == changed}

    assert ids(before, changed=False) == ids(after, changed=False)
    assert ids(before, changed=True) != ids(after, changed=True)


def test_identical_passages_across_files_are_kept_once(tmp_path):
    write_pdf(tmp_path / "a.pdf", [NORMANS, NOTICE])
    (tmp_path / "legal").mkdir()
    spaced = NOTICE.replace(" by ", "  by\n")  # the same text, whitespace aside
    (tmp_path / "legal" / "terms.txt").write_text(spaced, encoding="utf-8")
    contexts, skips = read_contexts(tmp_path, 20_000, 100)
    assert [c.context for c in contexts].count(NOTICE) == 1
    notice = next(c for c in contexts if c.context == NOTICE)
    assert (notice.source.file, notice.source.page) == ("a.pdf", 2)
    assert [(s.reason, s.id.split("#")[0]) for s in skips] == [
        ("duplicate_passage", "legal/terms.txt")
    ]
    assert notice.id in skips[0].detail


def test_unreadable_files_are_skipped_and_the_rest_is_read(tmp_path):
    root = folder(tmp_path)
    write_encrypted_pdf(root / "locked.pdf")
    write_image_only_pdf(root / "scan.pdf")
    (root / "blob.txt").write_bytes(b"\x00\x01\x02binary")
    (root / ".hidden.txt").write_text(NORMANS, encoding="utf-8")
    contexts, skips = read_contexts(root, 20_000, 1200)
    assert len(contexts) == 3
    assert {(s.id, s.reason) for s in skips} == {
        ("locked.pdf", "encrypted_pdf"),
        ("scan.pdf", "image_only_pdf"),
        ("blob.txt", "binary_file"),
    }
    assert all(isinstance(s, Skip) and s.detail for s in skips)


def test_a_folder_with_nothing_readable_says_what_it_found(tmp_path):
    write_image_only_pdf(tmp_path / "scan1.pdf")
    write_image_only_pdf(tmp_path / "scan2.pdf")
    (tmp_path / "blob.txt").write_bytes(b"\x00\x01\x02")
    with pytest.raises(InputError, match="3 files, none readable: 2 image-only PDFs, 1 binary"):
        read_contexts(tmp_path, 20_000, 1200)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no files in"):
        read_contexts(tmp_path / "empty", 20_000, 1200)


def test_the_cli_exits_2_on_a_folder_with_nothing_readable(tmp_path, capsys):
    from cq2a.cli import main

    write_image_only_pdf(tmp_path / "scan.pdf")
    assert main(["extract", str(tmp_path)]) == 2
    assert "1 file, none readable: 1 image-only PDF" in capsys.readouterr().err


def test_what_reading_did_to_a_pdf_stays_noted_on_its_first_passage(tmp_path):
    pages = [RHINE, CURIE, NORMANS[:200], NOTICE]
    write_pdf(tmp_path / "handbook.pdf", pages, furniture=True)
    contexts, _ = read_contexts(tmp_path, 20_000, 1200)
    assert contexts[0].note == "8 repeated header/footer lines removed"
    assert all(context.note is None for context in contexts[1:])
