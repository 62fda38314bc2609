"""Test support shared by the tests and the benchmarks: the loopback OpenAI-compatible backend.

Standard library only; never imported by the server itself.
"""
