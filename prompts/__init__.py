"""Prompt templates, loaded by name with ``cq2a.adapters.llm.prompts.load_prompt``."""
