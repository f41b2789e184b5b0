"""How often an answer is the gold cut short at one end (``trims_the_gold`` in
``cq2a/language/answers.py``), and what the rule changes in the comparison with the gold.

``--result``: a JSON ``evals.validity`` wrote; each re-asked span pair of its ``reasked`` list is
counted consistent by similarity alone (the run's threshold) and with the rule, apart for the
human questions (the gold is one of the question's own answers in ``--data``) and the
mismatched pairs (another question's answer). No model is asked: the votes are the run's.

``--answer-lists``: over the answer lists of ``--data``'s part, no model either: the alternate
answers that are their question's first answer cut short (the oracle then calls them no bug
without its judge), and the pairs of two questions' first answers in one passage where one is
the other cut short (a wrong answer the oracle would then excuse).

    python -m evals.trimmed --data evals/data/piaf_fr_sample.jsonl --result RESULT.json
    python -m evals.trimmed --data cq2a/data/squad2_dev_sample.jsonl --part tune --answer-lists
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cq2a.consistency.compare import answer_agrees, one_item_of_a_list
from cq2a.language.answers import answer_tokens, trims_the_gold
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


def cut_short_in_lists(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Alternates, and other questions' answers of the passage, that are a gold cut short."""
    alternates = alternates_cut = pairs = pairs_cut = 0
    examples: list[dict[str, str]] = []
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
                if trims_the_gold(texts[0], other):
                    alternates_cut += 1
                    examples.append({"alternate": other, "gold": texts[0]})
        for gold in golds:
            for other in golds:
                if answer_tokens(other) != answer_tokens(gold):
                    pairs += 1
                    if trims_the_gold(gold, other):
                        pairs_cut += 1
                        examples.append({"other_answer": other, "gold": gold})
    return {
        "alternates": alternates,
        "alternates_cut_short": alternates_cut,
        "answer_pairs": pairs,
        "answer_pairs_cut_short": pairs_cut,
        "examples": examples,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--part", choices=PARTS, default="all")
    parser.add_argument("--result", type=Path, default=None, help="an evals.validity JSON")
    parser.add_argument("--answer-lists", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if (args.result is None) == (not args.answer_lists):
        parser.error("give either --result or --answer-lists")
    part: Part = args.part
    if args.result is not None:
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
        figures = cut_short_in_lists(records)
        print(f"alternates cut short: {figures['alternates_cut_short']} of "
              f"{figures['alternates']}; other answers of the passage cut short: "
              f"{figures['answer_pairs_cut_short']} of {figures['answer_pairs']}")  # fmt: skip
        for example in figures["examples"]:
            print(f"  {example}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
