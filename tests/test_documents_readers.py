"""Each format's reader: the text a document's offsets point into, and the reason a file is
skipped when it has none."""

from __future__ import annotations

import pytest

from cq2a.documents.pages import line_shape, without_repeated_lines
from cq2a.documents.readers import Unreadable, read_document
from tests.document_files import (
    HEADER,
    NORMANS,
    write_encrypted_pdf,
    write_image_only_pdf,
    write_pdf,
)

PAGES = [
    "The Normans gave their name to Normandy. They came from Denmark and Norway.",
    "Rollo swore fealty to King Charles III. He received lands around Rouen in 911.",
    "The Norman conquest of England began in 1066. William won the battle of Hastings.",
    "Norman architecture has rounded arches. Durham Cathedral is a famous example.",
]


def test_text_is_read_as_utf8_with_line_ends_normalised(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes("Caf\u00e9 au lait.\r\nSecond line.\r\n".encode())
    assert read_document(path, "notes.txt").text == "Caf\u00e9 au lait.\nSecond line."


def test_markdown_is_read_without_its_markup(tmp_path):
    path = tmp_path / "guide.md"
    path.write_text(
        "# Normans\n\nThe **Normans** gave their name to [Normandy](https://x.org).\n\n"
        "- They came from *Denmark*.\n",
        encoding="utf-8",
    )
    text = read_document(path, "guide.md").text
    assert text == (
        "Normans\n\nThe Normans gave their name to Normandy.\n\nThey came from Denmark."
    )


def test_html_drops_navigation_scripts_and_page_furniture(tmp_path):
    path = tmp_path / "page.html"
    path.write_text(
        "<html><head><title>Normans</title><style>p {color: red}</style></head><body>"
        "<header>Site header</header><nav><a href='/'>Home</a></nav>"
        "<main><h1>The Normans</h1><p>The Normans gave their name to <b>Normandy</b>.</p>"
        "<p>They came from Denmark.</p><script>var x = 1;</script></main>"
        "<aside>Related links</aside><form>Search</form><noscript>Enable JS</noscript>"
        "<template>hidden</template><footer>Copyright 2024</footer></body></html>",
        encoding="utf-8",
    )
    text = read_document(path, "page.html").text
    assert "The Normans gave their name to Normandy." in text
    assert "They came from Denmark." in text
    for dropped in ("Site header", "Home", "color", "var x", "Related", "Search", "Enable JS"):
        assert dropped not in text
    assert "hidden" not in text and "Copyright" not in text


def test_pdf_keeps_pages_and_removes_the_repeated_header_and_footer(tmp_path):
    path = write_pdf(tmp_path / "handbook.pdf", PAGES, furniture=True)
    document = read_document(path, "handbook.pdf")
    assert HEADER not in document.text and "Page 2 of 4" not in document.text
    for number, page in enumerate(PAGES, start=1):
        at = document.text.index(page[:30])
        assert document.page_at(at) == number
    assert document.note == "8 repeated header/footer lines removed"


def test_pdf_of_two_pages_keeps_lines_that_repeat(tmp_path):
    path = write_pdf(tmp_path / "short.pdf", PAGES[:2], furniture=True)
    assert HEADER in read_document(path, "short.pdf").text


def test_page_numbers_count_as_one_line_shape():
    assert line_shape("Page 3 of 10") == line_shape("page 4 of 10") == "page # of #"
    pages = ["Title A\nbody one\n1", "Title B\nbody two\n2", "Title C\nbody three\n3"]
    kept, removed = without_repeated_lines(pages)
    assert kept == ["Title A\nbody one", "Title B\nbody two", "Title C\nbody three"]
    assert removed == 3


def test_short_pages_keep_their_body_when_it_repeats_but_for_its_numbers():
    pages = [
        f"ACME leave policy\nSection {n}. Staff get {20 + n} days.\nDays expire in March.\nPage {n}"
        for n in (1, 2, 3)
    ]
    kept, removed = without_repeated_lines(pages)
    assert removed == 6
    assert kept == [
        f"Section {n}. Staff get {20 + n} days.\nDays expire in March." for n in (1, 2, 3)
    ]


@pytest.mark.parametrize(
    ("name", "write", "reason"),
    [
        ("locked.pdf", write_encrypted_pdf, "encrypted_pdf"),
        ("scan.pdf", write_image_only_pdf, "image_only_pdf"),
        ("empty.txt", lambda p: p.write_bytes(b""), "empty_file"),
        ("empty.pdf", lambda p: p.write_bytes(b""), "empty_file"),
        ("blob.txt", lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00"), "binary_file"),
        (
            "latin1.txt",
            lambda p: p.write_bytes("Caf\u00e9 cr\u00e8me".encode("latin-1")),
            "unknown_encoding",
        ),
        ("broken.pdf", lambda p: p.write_bytes(b"%PDF-1.4 not really a pdf"), "unreadable_pdf"),
        ("punct.md", lambda p: p.write_text("--- *** ---", encoding="utf-8"), "no_text"),
        ("sheet.xlsx", lambda p: p.write_text(NORMANS, encoding="utf-8"), "unsupported_format"),
    ],
)
def test_a_bad_file_is_unreadable_with_its_reason(tmp_path, name, write, reason):
    path = tmp_path / name
    write(path)
    with pytest.raises(Unreadable) as raised:
        read_document(path, name)
    assert raised.value.reason == reason
