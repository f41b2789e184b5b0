"""Chat LLMs for the roles of a run: endpoints, the chat client, caching, limits, usage, the local
llama.cpp server and prompt files."""
