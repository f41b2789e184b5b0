"""III-A Answer extraction: the paper's entity rules, the answers people ask about, relation
triples, the question kinds beyond the paper, and a context's plan of slots."""
