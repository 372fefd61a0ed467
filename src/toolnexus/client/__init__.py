"""The unified LLM client: the tool-calling loop, streaming, memory and metrics."""
