"""Documents of every format for the tests, PDFs made with fpdf2."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF

HEADER = "ACME Corp. Employee Handbook"
NORMANS = (
    "The Normans were the people who gave their name to Normandy, a region in France. "
    "They were descended from Norse raiders and pirates from Denmark, Iceland and Norway. "
    "Their leader Rollo agreed to swear fealty to King Charles III of West Francia."
)


def _pdf() -> FPDF:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.set_auto_page_break(False)
    return pdf


def write_pdf(path: Path, pages: list[str], *, furniture: bool = False) -> Path:
    """A PDF with one page per text; with ``furniture`` every page has a header line and a
    "Page n of N" footer."""
    pdf = _pdf()
    for number, text in enumerate(pages, start=1):
        pdf.add_page()
        if furniture:
            pdf.set_xy(10, 10)
            pdf.cell(0, 8, HEADER)
        pdf.set_xy(10, 30)
        pdf.multi_cell(0, 6, text)
        if furniture:
            pdf.set_xy(10, 280)
            pdf.cell(0, 8, f"Page {number} of {len(pages)}")
    pdf.output(str(path))
    return path


def write_encrypted_pdf(path: Path) -> Path:
    pdf = _pdf()
    pdf.set_encryption(owner_password="owner", user_password="secret")
    pdf.add_page()
    pdf.multi_cell(0, 6, NORMANS)
    pdf.output(str(path))
    return path


def write_image_only_pdf(path: Path) -> Path:
    """A page with a drawn rectangle and no text, like a scan."""
    pdf = _pdf()
    pdf.add_page()
    pdf.rect(20, 20, 100, 60, style="F")
    pdf.output(str(path))
    return path
