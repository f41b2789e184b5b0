"""report.html over a run directory written from hand-made records (``tests.report_run``)."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cq2a.app import outputs as out
from cq2a.models.records import Attempt, RejectReason
from cq2a.reporting.exports import LABELING_SHEET, export_all, load_run, read_labels
from cq2a.reporting.funnel import funnel_rows
from cq2a.reporting.report import write_report
from tests.report_run import rejected_slot, write_run


def headline_values(html: str) -> dict[str, str]:
    """The report's headline cards, label -> value."""
    headline = re.search(r'id="headline">(.*?)</div>\s*(?=<section)', html, re.S)
    assert headline is not None
    return dict(
        (label, value)
        for value, label in re.findall(
            r'class="value">([^<]*)</div><div class="label">([^<]*)<', headline.group(1)
        )
    )


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run")


def test_report_shows_numbers_and_escapes_text(run_dir: Path) -> None:
    html = write_report(run_dir).read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Paris &amp; its suburbs" in html
    values = headline_values(html)
    assert values["Contexts"] == "2"
    assert values["Answers"] == "3"
    assert values["Questions generated"] == "5"
    assert values["Accepted tests"] == "3"
    assert values["Bugs"] == "2"
    assert values["Bug rate"] == "66.7%"
    assert values["Tokens"] == "12,345"
    assert values["Wall time"] == "2m 05s"
    assert values["Judge probe"] == "FAILED"
    assert 'id="probe-warning"' in html


def test_report_warns_of_unjudged_verdicts_and_cut_inputs(run_dir: Path) -> None:
    assert "counts-warning" not in write_report(run_dir).read_text(encoding="utf-8")
    record = out.read_json(run_dir / out.RUN)
    record["counts"] |= {"unjudged": 2, "sut_inputs_truncated": 1}
    out.write_json(run_dir / out.RUN, record)
    html = write_report(run_dir).read_text(encoding="utf-8")
    assert "2 verdicts unjudged" in html and "1 tests whose input the SUT cut" in html
    assert html.count('class="alert warn counts-warning"') == 2


def test_report_has_bug_rows_and_coverage_marks(run_dir: Path) -> None:
    html = write_report(run_dir).read_text(encoding="utf-8")
    assert html.count('class="bug-row"') == 2
    assert '<table id="bugs">' in html
    assert re.search(r'<mark class="ans entity-phrase bug"[^>]*>The Normans</mark>', html)
    assert re.search(r'<mark class="ans entity-word"[^>]*>Paris</mark>', html)
    assert '<span class="sent"> is the capital of France.</span>' in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    coverages = re.findall(r'class="coverage">([^<]*)<', html)
    # ctx-b: 26 of 63 non-space characters are in the one used sentence.
    assert coverages[1] == "41.3%"


def test_funnel_counts_per_kind(run_dir: Path) -> None:
    rows = {row.kind: row for row in funnel_rows(load_run(run_dir))}
    word, phrase, total = rows["entity-word"], rows["entity-phrase"], rows["all"]
    assert (word.answers, word.generated, word.passed_checks, word.consistent) == (2, 3, 3, 2)
    assert (word.accepted, word.bugs) == (2, 1)
    assert (phrase.generated, phrase.passed_checks, phrase.accepted, phrase.bugs) == (2, 1, 1, 1)
    assert (total.answers, total.generated, total.accepted, total.bugs) == (3, 5, 3, 2)
    assert "relation" not in rows


def test_attempts_without_a_question_are_not_counted_as_generated(run_dir: Path) -> None:
    data = load_run(run_dir)
    paris = next(a for a in data.answers if a.text == "Paris")
    silent = Attempt(number=1, question="", explanation="", reasons=[RejectReason.NO_QUESTION])
    empty_slot = rejected_slot(paris, silent, slot=2)
    out.write_jsonl(run_dir / out.REJECTED, [*data.candidates, empty_slot])
    rows = {row.kind: row for row in funnel_rows(load_run(run_dir))}
    assert rows["all"].generated == 5
    html = write_report(run_dir).read_text(encoding="utf-8")
    assert headline_values(html)["Questions generated"] == "5"
    assert "not_generated" in html


def test_rejection_reasons_listed(run_dir: Path) -> None:
    html = write_report(run_dir).read_text(encoding="utf-8")
    reasons = re.search(r'<section id="reasons">(.*?)</section>', html, re.S)
    assert reasons is not None
    assert "answer_leak" in reasons.group(1) and "inconsistent_answer" in reasons.group(1)


def test_labels_read_back_and_show_in_report(run_dir: Path) -> None:
    export_all(run_dir)
    sheet = run_dir / LABELING_SHEET
    with sheet.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["item"] for row in rows) == ["bug", "bug", "question"] + ["question"] * 2
    assert all(row["label"] == "" and row["note"] == "" for row in rows)
    labels = {"bug": iter(["1", "0"]), "question": iter(["1", "1", ""])}
    for row in rows:
        row["label"] = next(labels[row["item"]])
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    summary = read_labels(sheet)
    assert summary["bug_tp_rate"] == 0.5
    assert summary["question_precision"] == 1.0
    assert summary["questions_labeled"] == 2
    html = write_report(run_dir).read_text(encoding="utf-8")
    assert read_labels(sheet) == summary  # a labelled sheet is not overwritten
    assert "Bug TP rate (labelled)" in html and "50.0%" in html


def chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def run_chromium(url: str, profile: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    browser = chromium()
    assert browser is not None
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *flags,
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


#: Chromium logs every console message and uncaught exception as ``INFO:CONSOLE:<line>] "..."``;
#: the report logs nothing, so any such line is a fault.
CONSOLE_LINE = re.compile(r"Uncaught|:CONSOLE[:(]")


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if CONSOLE_LINE.search(line)]


@pytest.mark.browser
@pytest.mark.skipif(
    chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_report_renders_in_headless_chromium(run_dir: Path, tmp_path: Path) -> None:
    url = write_report(run_dir).resolve().as_uri()
    result = run_chromium(url, tmp_path / "profile", "--dump-dom")
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert 'data-ready="1"' in dom
    assert re.search(r'<span id="visible-count">2</span>', dom)
    assert dom.count('class="bug-row"') == 2
    assert console_lines(result.stderr) == []
    shot = tmp_path / "report.png"
    snap = run_chromium(
        url, tmp_path / "profile2", f"--screenshot={shot}", "--window-size=1280,2000"
    )
    assert snap.returncode == 0 and shot.stat().st_size > 10_000


@pytest.mark.browser
@pytest.mark.skipif(
    chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
@pytest.mark.parametrize(
    ("fragment", "shown"), [("kind=entity-word", 1), ("q=VIKINGS", 1), ("q=zzz", 0)]
)
def test_bug_filters_run_in_headless_chromium(
    run_dir: Path, tmp_path: Path, fragment: str, shown: int
) -> None:
    url = write_report(run_dir).resolve().as_uri() + "#" + fragment
    dom = run_chromium(url, tmp_path / "profile", "--dump-dom").stdout
    assert 'data-ready="1"' in dom
    assert f'<span id="visible-count">{shown}</span>' in dom
    assert len(re.findall(r'<tr class="bug-row"(?![^>]*hidden)', dom)) == shown


@pytest.mark.browser
@pytest.mark.skipif(
    chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_console_errors_are_detected(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>missingFunction();</script></body></html>")
    result = run_chromium(page.as_uri(), tmp_path / "profile", "--dump-dom")
    assert any("Uncaught ReferenceError" in line for line in console_lines(result.stderr))


def test_report_shows_the_mix_and_the_coverage_heat_map(run_dir: Path) -> None:
    html = write_report(run_dir).read_text(encoding="utf-8")
    suite = html[html.index('<section id="suite">') :]
    suite = suite[: suite.index("</section>")]
    assert "Question mix not honoured" in suite  # 3 entity tests of 3 against a chosen 80%
    assert "<td>yesno</td><td>20.0%</td><td>0.0%</td><td>0</td>" in suite
    assert suite.count('class="heat"') == 2 and "cell on" in suite


def test_report_says_which_kinds_were_cut_back(run_dir: Path) -> None:
    html = write_report(run_dir).read_text(encoding="utf-8")
    assert "Cut back" not in html
    record = out.read_json(run_dir / out.RUN)
    record["counts"] |= {"kinds_cut_back": {"unanswerable": 2, "relation": 1}}
    out.write_json(run_dir / out.RUN, record)
    suite = write_report(run_dir).read_text(encoding="utf-8")
    suite = suite[suite.index('<section id="suite">') :]
    cut = re.search(r"<p>Cut back \(([^)]*)\):\s*(.*?)</p>", suite, re.S)
    assert cut is not None
    assert "once its slots there, 1 or more, were all rejected" in cut.group(1)
    assert cut.group(2).split() == "unanswerable in 2 contexts, relation in 1 context.".split()
