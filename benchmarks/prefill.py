"""How fast a real server reads a prompt, against how fast it decodes: the fake's `--prefill-tokens-per-pass`.

    python benchmarks/prefill.py [--url http://127.0.0.1:8001/v1] [--model local] [--repeat 3]

Against a plain (not speculating) OpenAI-compatible server, e.g. `benchmarks/local_vllm.sh`'s :8001:
prompts of growing size cut from a corpus file, each made unique (no prefix cache), answered with
one token (time to first token), then a few answers of 96 tokens with `ignore_eos` (decode time per
token). Prints the median time to first token per size, the decode pass, the prompt time per token
(the slope between the second-smallest and the largest size) and what the fake needs: prompt tokens
per pass in the server's tokens and in the fake's (its tokenizer counts more).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path

import httpx

from lsp_server.testing.speculation import tokenize

CORPUS = Path(__file__).parent / "tasks" / "py-scheduler-rename-in-long-class" / "source.py"


def complete(client: httpx.Client, url: str, model: str, text: str, max_tokens: int) -> tuple[float, float, dict]:
    """(time to first content, latency, usage) of one streamed answer."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": text}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    started = time.perf_counter()
    first, usage = None, {}
    with client.stream("POST", f"{url}/chat/completions", json=body) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line.removeprefix("data: "))
            usage = event.get("usage") or usage
            if first is None and any(c.get("delta", {}).get("content") for c in event.get("choices", [])):
                first = time.perf_counter() - started
    if first is None:
        raise SystemExit(f"prefill.py: {url} answered no text; is it a chat model, and does it stream?")
    return first, time.perf_counter() - started, usage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8001/v1")
    parser.add_argument("--model", default="local")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    try:
        measure(args)
    except httpx.HTTPError as exc:
        raise SystemExit(f"prefill.py: {args.url}: {exc}; is a plain server running there?") from None


def measure(args: argparse.Namespace) -> None:
    corpus = CORPUS.read_text(encoding="utf-8")
    sizes: list[tuple[int, int, float]] = []  # (server's prompt tokens, fake's, median TTFT in s)
    with httpx.Client(timeout=600) as client:
        for chars in (500, 2000, 4000, 7000, 10000):
            ttfts, counted = [], (0, 0)
            for _ in range(args.repeat):
                text = f"# {uuid.uuid4()}\n{corpus[:chars]}\nRewrite this."
                ttft, _, usage = complete(client, args.url, args.model, text, 1)
                ttfts.append(ttft)
                counted = (usage.get("prompt_tokens", 0), len(tokenize(text)))
            sizes.append((*counted, statistics.median(ttfts)))
            ms = sizes[-1][2] * 1000
            print(f"prompt {counted[0]:>5} tokens ({counted[1]:>5} fake): first token after {ms:.0f} ms")
        passes = []
        for _ in range(args.repeat):
            ttft, latency, usage = complete(client, args.url, args.model, f"# {uuid.uuid4()}\nWrite a long story.", 96)
            passes.append((latency - ttft) / max(usage.get("completion_tokens", 2) - 1, 1))
    decode = statistics.median(passes)
    (small, small_fake, small_t), (large, large_fake, large_t) = sizes[1], sizes[-1]
    per_token = (large_t - small_t) / (large - small)
    per_fake_token = (large_t - small_t) / (large_fake - small_fake)
    print(f"decode: {decode * 1000:.1f} ms a pass (median of {args.repeat})")
    print(f"prompt: {per_token * 1000:.2f} ms per token ({per_fake_token * 1000:.2f} per fake token)")
    server, fake = decode / per_token, decode / per_fake_token
    print(f"--prefill-tokens-per-pass: {server:.1f} of the server's tokens, {fake:.1f} of the fake's")


if __name__ == "__main__":
    main()
