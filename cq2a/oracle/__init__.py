"""III-D The test oracle: the software under test answers in batches, then embedding similarity and
an LLM judge decide."""
