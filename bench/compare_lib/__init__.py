"""Helpers for bench/compare: staticlm side by side with llama.cpp and transformers."""
