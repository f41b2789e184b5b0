"""III-C2 Consistency verification: re-ask a question, vote, and compare the majority with the gold
answer."""
