"""How fast documents are read and cut into passages, and that a large folder is never held in
memory at once.

It generates, in a temporary folder, a text file and an HTML page of ``--mb`` megabytes and a
folder of ``--pdfs`` PDFs of ``--pages`` pages (with a header and a "Page n of N" footer on
every page), all from the shipped SQuAD sample's contexts, then times ``cq2a.documents`` on
each: reading and splitting into passages of the default ``passage_chars``. fpdf2 writes a PDF
page in about 0.1 s, so ``--distinct`` PDFs are generated and the others are copies of them
(their passages become ``duplicate_passage`` skips, but every page is still read and split).
The folder is read in a child process twice, on a tenth of the files and on all of them: the
peak resident memory of each (``ru_maxrss``, beside the process's resident memory once its
imports and the sentencizer are loaded) shows whether memory grows with the folder. The text
is the sample's sentences drawn at random into paragraphs, so passages rarely repeat.

    python -m evals.reading --json evals/results/reading.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from fpdf import FPDF

from cq2a.documents.corpus import read_corpus
from cq2a.documents.split import sentencizer
from cq2a.models.records import Context
from cq2a.settings import Settings
from evals.recall import SHIPPED

HEADER = "Quarterly Report of the Example Corporation"


def sample_sentences() -> list[str]:
    """The shipped SQuAD sample's sentences (cut at ". ": good enough for test data)."""
    contexts = [json.loads(line)["context"] for line in SHIPPED.read_text("utf-8").splitlines()]
    return [s.strip() + "." for c in contexts for s in c.split(". ") if s.strip()]


def paragraphs(sentences: list[str], count: int, seed: int) -> list[str]:
    """``count`` paragraphs of 4 to 8 sentences drawn at random: text that rarely repeats."""
    rng = random.Random(seed)
    return [" ".join(rng.sample(sentences, rng.randint(4, 8))) for _ in range(count)]


def _latin1(text: str) -> str:
    """The core PDF fonts are Latin-1; other characters become '?'."""
    return text.encode("latin-1", "replace").decode("latin-1")


def write_pdf(path: Path, pages: int, sentences: list[str], seed: int) -> None:
    texts = paragraphs(sentences, 2 * pages, seed)
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.set_auto_page_break(False)
    for number in range(1, pages + 1):
        pdf.add_page()
        pdf.set_xy(10, 8)
        pdf.cell(0, 6, HEADER)
        pdf.set_xy(10, 20)
        first, second = texts[2 * number - 2], texts[2 * number - 1]
        pdf.multi_cell(0, 5, _latin1(f"{first}\n\n{second}"[:2400]))
        pdf.set_xy(10, 285)
        pdf.cell(0, 6, f"Page {number} of {pages}")
    pdf.output(str(path))


def pdf_folder(root: Path, pdfs: int, pages: int, distinct: int, sentences: list[str]) -> Path:
    folder = root / "pdfs"
    folder.mkdir()
    for n in range(distinct):
        write_pdf(folder / f"report{n:03d}.pdf", pages, sentences, seed=n)
    for n in range(distinct, pdfs):
        shutil.copyfile(folder / f"report{n % distinct:03d}.pdf", folder / f"report{n:03d}.pdf")
    return folder


def text_file(root: Path, megabytes: float, sentences: list[str]) -> Path:
    book = "\n\n".join(paragraphs(sentences, int(megabytes * 1_000), seed=-1))
    while len(book.encode("utf-8")) < megabytes * 1_000_000:
        book += "\n\n" + "\n\n".join(paragraphs(sentences, 100, seed=len(book)))
    path = root / "book.txt"
    path.write_text(book, encoding="utf-8")
    return path


def html_file(root: Path, text: Path) -> Path:
    body = "".join(f"<p>{p}</p>\n" for p in text.read_text("utf-8").split("\n\n"))
    page = (
        "<html><head><title>Book</title><style>p {margin: 0}</style></head><body>"
        "<nav><a href='/'>Home</a></nav><header>Site</header><main>"
        f"{body}</main><script>var x = 1;</script><footer>(c)</footer></body></html>"
    )
    path = root / "book.html"
    path.write_text(page, encoding="utf-8")
    return path


def read_all(path: Path, passage_chars: int) -> dict[str, Any]:
    """Read and split every file of ``path``, keeping only counts (a stream, not a list)."""
    started = time.perf_counter()
    passages = chars = skipped = 0
    for item in read_corpus(path, passage_chars):
        if isinstance(item, Context):
            passages += 1
            chars += len(item.context)
        else:
            skipped += 1
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "passages": passages,
        "passage_chars_total": chars,
        "skipped": skipped,
    }


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _child(path: str, passage_chars: int, queue: Any) -> None:
    sentencizer()("Loaded before the clock starts.")
    before = _peak_rss_mb()
    figures = read_all(Path(path), passage_chars)
    queue.put(figures | {"rss_before_mb": before, "peak_rss_mb": _peak_rss_mb()})


def in_child(path: Path, passage_chars: int) -> dict[str, Any]:
    """``read_all`` in a fresh process, with that process's peak resident memory."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_child, args=(str(path), passage_chars, queue))
    process.start()
    figures = queue.get()
    process.join()
    return figures


def measure(args: argparse.Namespace) -> dict[str, Any]:
    passage_chars = Settings().passage_chars
    sentences = sample_sentences()
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        started = time.perf_counter()
        folder = pdf_folder(root, args.pdfs, args.pages, args.distinct, sentences)
        generated = round(time.perf_counter() - started, 1)
        book = text_file(root, args.mb, sentences)
        page = html_file(root, book)
        read_all(book, passage_chars)  # loads spaCy's sentencizer before any timing
        results: dict[str, Any] = {"passage_chars": passage_chars, "pdf_generation_s": generated}
        for name, path in (("text", book), ("html", page)):
            figures = read_all(path, passage_chars)
            megabytes = path.stat().st_size / 1_000_000
            figures |= {
                "mb": round(megabytes, 2),
                "mb_per_s": round(megabytes / figures["seconds"], 2),
            }
            results[name] = figures
        tenth = root / "tenth"
        tenth.mkdir()
        for pdf in sorted(folder.iterdir())[: max(args.pdfs // 10, 1)]:
            shutil.copyfile(pdf, tenth / pdf.name)
        for name, path, pdfs in (
            ("pdf_tenth", tenth, max(args.pdfs // 10, 1)),
            ("pdf_folder", folder, args.pdfs),
        ):
            figures = in_child(path, passage_chars)
            pages = pdfs * args.pages
            size = sum(p.stat().st_size for p in path.iterdir()) / 1_000_000
            figures |= {
                "pdfs": pdfs,
                "pages": pages,
                "folder_mb": round(size, 1),
                "pages_per_s": round(pages / figures["seconds"], 1),
            }
            results[name] = figures
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdfs", type=int, default=100)
    parser.add_argument("--pages", type=int, default=100, help="Pages per PDF.")
    parser.add_argument("--distinct", type=int, default=5, help="PDFs generated; the rest copies.")
    parser.add_argument("--mb", type=float, default=5.0, help="Size of the text and HTML files.")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    text = json.dumps(measure(args), indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
