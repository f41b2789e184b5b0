"""How often an answer is the gold cut short at one end (``trims_the_gold`` in
``cq2a/language/answers.py``), and what the rule changes in the comparison with the gold.

``--result``: a JSON ``evals.validity`` wrote; each re-asked span pair of its ``reasked`` list is
counted consistent by similarity alone (the run's threshold) and with the rule, apart for the
human questions (the gold is one of the question's own answers in ``--data``) and the
mismatched pairs (another question's answer). No model is asked: the votes are the run's.

``--answer-lists``: over the answer lists of ``--data``'s part, no model either (the parser of
``--language`` only): the alternate answers that are their question's first answer cut short,
or that hold it with words of the passage around it (the oracle then calls them no bug without
its judge), and the pairs of two questions' first answers in one passage where one is the
other cut short or holds it (a wrong answer the oracle would then excuse).

    python -m evals.trimmed --data evals/data/piaf_fr_sample.jsonl --result RESULT.json
    python -m evals.trimmed --data cq2a/data/squad2_dev_sample.jsonl --part tune --answer-lists
    python -m evals.trimmed --data evals/data/piaf_fr_sample.jsonl --part tune --answer-lists \
        --language fr
    python -m evals.trimmed --bugs RUN_DIR [RUN_DIR ...]

``--bugs``: the bugs the judge decided in finished runs, and those ``holds_the_gold`` would
now excuse (true bugs among them are bugs the oracle would miss).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cq2a.consistency.compare import answer_agrees, one_item_of_a_list
from cq2a.language.answers import answer_tokens, holds_the_gold, trims_the_gold
from cq2a.language.lemmas import Lemmatizer, contains_run
from cq2a.language.parsing import get_parser, lemmatizer
from evals.parts import PARTS, Part, records_of_part


def answer_lists(records: list[dict[str, Any]]) -> dict[tuple[str, str], list[str]]:
    """(context id, question) -> the question's answers, first the one a gold is taken from."""
    return {
        (record["id"], qa["question"]): qa["answers"] for record in records for qa in record["qas"]
    }


def recount(result: dict[str, Any], answers: dict[tuple[str, str], list[str]]) -> dict[str, Any]:
    """The run's re-asked span pairs counted consistent by similarity alone and by the
    comparison the pipeline makes now (``answer_agrees``, which reads ``trims_the_gold``; a
    span gold needs no count of votes, which the result does not keep)."""
    threshold = result["settings"]["consistency_threshold"]
    counts = {side: {"pairs": 0, "similar": 0, "with_rule": 0} for side in ("human", "mismatched")}
    taken: list[dict[str, Any]] = []
    for pair in result["reasked"]:
        if pair["type"] != "span":
            continue
        gold, majority, score = pair["gold"], pair["majority"] or "", pair["similarity"] or 0.0
        human = gold in answers.get((pair["context_id"], pair["question"]), [])
        side = counts["human" if human else "mismatched"]
        similar = score >= threshold and not one_item_of_a_list(gold, majority)
        with_rule = answer_agrees(gold, majority, 1, 1, score, threshold)
        side["pairs"] += 1
        side["similar"] += similar
        side["with_rule"] += with_rule
        if with_rule and not similar:
            taken.append({"human": human, "question": pair["question"], "gold": gold,
                          "majority": majority, "similarity": pair["similarity"]})  # fmt: skip
    return {"threshold": threshold, **counts, "taken_by_the_rule": taken}


def cut_short_in_lists(records: list[dict[str, Any]], lemmatize: Lemmatizer) -> dict[str, Any]:
    """Alternates, and other questions' answers of the passage, that are a gold cut short
    (``trims_the_gold``) or that hold it with words of the passage around it
    (``holds_the_gold``): the oracle calls either no bug without its judge."""
    alternates = pairs = 0
    cut = {"alternates": 0, "answer_pairs": 0}
    held = {"alternates": 0, "answer_pairs": 0}
    examples: list[dict[str, str]] = []

    def count(gold: str, other: str, context: str, side: str) -> None:
        for rule, tally, test in (
            ("cut short", cut, trims_the_gold(gold, other)),
            ("holds the gold", held, holds_the_gold(gold, other, context, lemmatize)),
        ):
            if test:
                tally[side] += 1
                examples.append({"rule": rule, side.rstrip("s"): other, "gold": gold})

    for record in records:
        golds = []
        for qa in record["qas"]:
            texts = qa["answers"]
            if not texts:
                continue
            golds.append(texts[0])
            for other in dict.fromkeys(texts[1:]):
                if answer_tokens(other) == answer_tokens(texts[0]):
                    continue
                alternates += 1
                count(texts[0], other, record["context"], "alternates")
        for gold in golds:
            for other in golds:
                if answer_tokens(other) != answer_tokens(gold):
                    pairs += 1
                    count(gold, other, record["context"], "answer_pairs")
    return {
        "alternates": alternates,
        "alternates_cut_short": cut["alternates"],
        "alternates_holding_the_gold": held["alternates"],
        "answer_pairs": pairs,
        "answer_pairs_cut_short": cut["answer_pairs"],
        "answer_pairs_holding_the_gold": held["answer_pairs"],
        "examples": examples,
    }


def bugs_excused(runs: list[Path]) -> dict[str, Any]:
    """Of the bugs the judge decided in finished runs (their ``bugs.jsonl``, each SUT answer
    once per question): how many answers contain the gold's words at all (those the rule could
    take), and those ``holds_the_gold`` would now call no bug."""
    lemmatizers: dict[str, Lemmatizer] = {}
    seen: set[tuple[str, str]] = set()
    bugs = containing = 0
    excused: list[dict[str, str]] = []
    for run in runs:
        for line in (run / "bugs.jsonl").read_text(encoding="utf-8").splitlines():
            bug = json.loads(line)
            key = (bug["question"], bug["sut_answer"])
            if key in seen or bug.get("stage") != "judge":
                continue
            seen.add(key)
            bugs += 1
            gold, said = answer_tokens(bug["gold_answer"]), answer_tokens(bug["sut_answer"])
            containing += len(said) > len(gold) and contains_run(said, gold)
            language = bug.get("language") or "en"
            if language not in lemmatizers:
                lemmatizers[language] = lemmatizer(get_parser("spacy", language))
            if holds_the_gold(
                bug["gold_answer"], bug["sut_answer"], bug["context"], lemmatizers[language]
            ):
                excused.append(
                    {"run": run.name, "gold": bug["gold_answer"], "sut": bug["sut_answer"]}
                )
    return {"bugs": bugs, "containing_the_gold": containing, "excused": excused}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--part", choices=PARTS, default="all")
    parser.add_argument("--result", type=Path, default=None, help="an evals.validity JSON")
    parser.add_argument("--answer-lists", action="store_true")
    parser.add_argument("--bugs", type=Path, nargs="+", default=None, help="run directories")
    parser.add_argument("--language", default="en", help="the sample's (its parser's) language")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if sum((args.result is not None, args.answer_lists, args.bugs is not None)) != 1:
        parser.error("give one of --result, --answer-lists and --bugs")
    if args.data is None and args.bugs is None:
        parser.error("--data is needed with --result and --answer-lists")
    part: Part = args.part
    if args.bugs is not None:
        figures = bugs_excused(args.bugs)
        print(f"bugs decided by the judge: {figures['bugs']}, their answer holding the gold's "
              f"words: {figures['containing_the_gold']}, excused by holds_the_gold: "
              f"{len(figures['excused'])}")  # fmt: skip
        for item in figures["excused"]:
            print(f"  {item}")
    elif args.result is not None:
        records = records_of_part(args.data.read_text(encoding="utf-8").splitlines(), "all")
        result = json.loads(args.result.read_text(encoding="utf-8"))
        figures = recount(result, answer_lists(records))
        for side in ("human", "mismatched"):
            c = figures[side]
            print(f"{side}: {c['similar']} of {c['pairs']} consistent by similarity, "
                  f"{c['with_rule']} with the rule")  # fmt: skip
        for item in figures["taken_by_the_rule"]:
            who = "human" if item["human"] else "mismatched"
            print(f"  {who}: {item['majority']!r} for {item['gold']!r} ({item['similarity']})")
    else:
        records = records_of_part(args.data.read_text(encoding="utf-8").splitlines(), part)
        figures = cut_short_in_lists(records, lemmatizer(get_parser("spacy", args.language)))
        print(f"alternates cut short: {figures['alternates_cut_short']} of "
              f"{figures['alternates']}, holding the gold: "
              f"{figures['alternates_holding_the_gold']}; other answers of the passage cut "
              f"short: {figures['answer_pairs_cut_short']} of {figures['answer_pairs']}, "
              f"holding the gold: {figures['answer_pairs_holding_the_gold']}")  # fmt: skip
        for example in figures["examples"]:
            print(f"  {example}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
