"""Prompt templates, loaded by name with ``cq2a.prompts_loader.load_prompt``."""
