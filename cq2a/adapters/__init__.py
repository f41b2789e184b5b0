"""Adapters to the outside: chat LLMs (``llm``), the software under test (``sut``), and fan-out of
calls over threads."""
