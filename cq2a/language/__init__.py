"""Language beneath the paper's stages: word classes, answer text, lemmas, parsing (III-A1) and
sentence embeddings."""
