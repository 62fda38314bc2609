"""The proposer's alignment replayed on the task corpus, without a server: how many forward passes an
answer takes when its drafts come from the prediction, how many drafted tokens are thrown away, and
what the alignment costs per step (lsp_server/proposer).

At temperature 0 speculative decoding writes the same answer whatever is drafted; only the number of
forward passes changes. So the replay takes the answer as given (each task's expected region: what a
model that makes the edit writes), drafts from the prediction (the region as it was) at each step,
accepts the longest agreeing prefix and one token more, exactly as vLLM verifies a draft. Each
variant (tokens a step, adaptive or not) is replayed on the same answers; `--apply` replays the apply
tasks with two predictions per part: the region as it is, and what an apply sends a server with the
proposer: the region with the snippet's part merged in (formats/lazy_merge.py, `placed_prediction`).

    python benchmarks/proposer_alignment.py --tokenizer benchmarks/.vllm/models/smollm2/tokenizer.json
    python benchmarks/proposer_alignment.py --tokenizer ... --outputs benchmarks/results/proposer/round1-baseline.json

`--outputs BENCH.json` replays a bench's own answers instead (what the model really wrote, the same at
temperature 0 whatever the server drafted), each drafted three ways: from the prediction alone (the
proposer), by prompt lookup over the prompt and the answer so far (as vLLM's n-gram method, 2 to 3
tokens), and from the prediction while aligned, by prompt lookup where not (a hybrid, not the proposer);
`--against-lookup` drafts the tasks' expected regions those three ways.

Tokens come from the given tokenizer.json (the `tokenizers` package), else from a simple split into
words, punctuation and runs of white space. Times are this machine's, with whatever else runs on it.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from lsp_server.bench.apply_tasks import load_apply_tasks  # noqa: E402
from lsp_server.bench.tasks import load_tasks  # noqa: E402
from lsp_server.config.load import build_config  # noqa: E402
from lsp_server.formats.lazy_merge import placed_prediction  # noqa: E402
from lsp_server.pipeline.engine import Engine  # noqa: E402
from lsp_server.pipeline.merge import snippet_code  # noqa: E402
from lsp_server.placement.where import place_snippet, read_parts  # noqa: E402
from lsp_server.proposer.align import Alignment  # noqa: E402
from lsp_server.proposer.lookup import PromptLookup  # noqa: E402
from lsp_server.regions import ScopeCache  # noqa: E402

Tokenize = Callable[[str], list[int]]


def tokenizer(path: Path | None) -> tuple[Tokenize, str]:
    if path is not None:
        from tokenizers import Tokenizer

        loaded = Tokenizer.from_file(str(path))
        return (lambda text: loaded.encode(text, add_special_tokens=False).ids), f"{path.parent.name}'s tokenizer"
    vocabulary: dict[str, int] = {}

    def simple(text: str) -> list[int]:
        return [vocabulary.setdefault(p, len(vocabulary)) for p in re.findall(r"\w+|[^\w\s]|\s+", text)]

    return simple, "words, punctuation and runs of white space"


@dataclass
class Replayed:
    tokens: int = 0  # answer tokens after the first (the prefill writes that one)
    passes: int = 0
    drafted: int = 0
    accepted: int = 0
    step_s: list[float] | None = None  # the alignment's time per step: feed and draft

    def add(self, other: Replayed) -> None:
        self.tokens += other.tokens
        self.passes += other.passes
        self.drafted += other.drafted
        self.accepted += other.accepted
        assert self.step_s is not None and other.step_s is not None
        self.step_s += other.step_s


def replay(prediction: list[int], answer: list[int], k: int, adaptive: bool) -> Replayed:
    """Speculative decoding of `answer`, each draft from the prediction's cursor (as drafts.Drafter does)."""
    cursor = Alignment(prediction)
    cursor.feed(answer[:1])
    done = Replayed(tokens=max(len(answer) - 1, 0), step_s=[])
    i = 1
    while i < len(answer):
        started = time.perf_counter()
        draft = cursor.draft(min(k, cursor.confidence + 1) if adaptive else k)
        drafted_s = time.perf_counter() - started
        agree = 0
        while agree < len(draft) and i + agree < len(answer) and draft[agree] == answer[i + agree]:
            agree += 1
        written = answer[i : i + agree + 1]
        started = time.perf_counter()
        cursor.feed(written)
        assert done.step_s is not None
        done.step_s.append(drafted_s + time.perf_counter() - started)
        i += len(written)
        done.passes += 1
        done.drafted += len(draft)
        done.accepted += agree
    return done


def replay_drafter(answer: list[int], first: int, k: int, draft: Callable[[], list[int]], feed: Callable) -> Replayed:
    """Speculative decoding of `answer[first:]` with `draft()` each step and `feed(tokens)` after it."""
    done = Replayed(tokens=max(len(answer) - first, 0), step_s=[])
    i = first
    while i < len(answer):
        proposal = draft()[:k]
        agree = 0
        while agree < len(proposal) and i + agree < len(answer) and proposal[agree] == answer[i + agree]:
            agree += 1
        written = answer[i : i + agree + 1]
        feed(written)
        i += len(written)
        done.passes += 1
        done.drafted += len(proposal)
        done.accepted += agree
    return done


def replay_outputs(report: Path | None, tokenize: Tokenize, tasks_dir: Path, k: int) -> None:
    """Each answer of a bench report (None: each task's expected region) replayed with three drafters (see
    the module's docstring), the prompt as the product builds it (region format, the default settings)."""
    import json

    if report is not None:
        runs = json.loads(report.read_text())["runs"]
        answers = [(run["task"], run["output"]) for run in runs if run.get("stats") and run["mode"] == "prediction"]
    else:
        answers = [(task.name, task.expected_region()) for task in load_tasks(tasks_dir)]
    tasks = {task.name: task for task in load_tasks(tasks_dir, sorted({name for name, _ in answers}))}
    config = build_config([])
    totals = {name: Replayed(step_s=[]) for name in ("prediction", "prompt lookup", "hybrid")}
    for name, output in answers:
        task = tasks[name]
        plan = Engine().plan(task.request(config.default_backend, None), config)
        prompt = plan.prompt_in("region", plan.settings.context_chars)
        context = tokenize("\n".join(m["content"] for m in prompt.messages))
        answer = tokenize(output)
        prediction = tokenize(prompt.prediction)
        cursor = Alignment(prediction)
        cursor.feed(answer[:1])
        totals["prediction"].add(replay_drafter(answer, 1, k, lambda c=cursor: c.draft(k), cursor.feed))
        lookup = PromptLookup()
        lookup.feed(context + answer[:1])
        totals["prompt lookup"].add(replay_drafter(answer, 1, k, lambda lk=lookup: lk.draft(k), lookup.feed))
        cursor, lookup = Alignment(prediction), PromptLookup()
        cursor.feed(answer[:1])
        lookup.feed(context + answer[:1])

        def hybrid(c: Alignment = cursor, lk: PromptLookup = lookup) -> list[int]:
            return c.draft(k) if c.pos is not None else lk.draft(k)

        def both(tokens: list[int], c: Alignment = cursor, lk: PromptLookup = lookup) -> None:
            c.feed(tokens)
            lk.feed(tokens)

        totals["hybrid"].add(replay_drafter(answer, 1, k, hybrid, both))
    source = report.name if report is not None else "the tasks' expected regions"
    print(f"{len(answers)} answers of {source}, {k} tokens a step\n")
    print("| drafted by | passes | ÷ no drafts | drafted | accepted | acceptance |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, total in totals.items():
        print(
            f"| {name} | {total.passes:,} | {total.tokens / total.passes:.2f}× | {total.drafted:,} "
            f"| {total.accepted:,} | {total.accepted / max(total.drafted, 1):.0%} |"
        )


def pairs(tasks_dir: Path, apply: bool) -> list[tuple[str, str, str]]:
    """(task, prediction, answer) for each task; with `apply`, (task, prediction, answer) per placed part
    twice: "task [region]" with the region as it is, "task [placed]" with the part merged in."""
    if not apply:
        out = []
        for task in load_tasks(tasks_dir):
            start, end = task.span()
            out.append((task.name, task.source[start:end], task.expected_region()))
        return out
    tasks, _ = load_apply_tasks(tasks_dir)
    out = []
    for task in tasks:
        read = read_parts(snippet_code(task.snippet), task.language)
        placed = place_snippet(task.source, read, task.language, None, ScopeCache())
        for part, (region, expected) in zip(placed, task.answers, strict=True):
            out.append((f"{task.name} [region]", region, expected))
            out.append((f"{task.name} [placed]", placed_prediction(region, part.part), expected))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", type=Path, help="a tokenizer.json (default: a simple split)")
    parser.add_argument("--tasks", type=Path, default=HERE / "tasks")
    parser.add_argument("--k", default="4,6,8,10,16", help="tokens a step to replay, comma-separated")
    parser.add_argument("--apply", action="store_true", help="the apply tasks: the region against the placed part")
    parser.add_argument("--outputs", type=Path, help="a bench --json report: replay its answers (the first --k)")
    parser.add_argument(
        "--against-lookup", action="store_true", help="the expected regions drafted three ways, as --outputs does"
    )
    args = parser.parse_args()
    tokenize, named = tokenizer(args.tokenizer)
    if args.outputs or args.against_lookup:
        replay_outputs(args.outputs, tokenize, args.tasks, int(args.k.split(",")[0]))
        return
    work = [(name, tokenize(p), tokenize(a)) for name, p, a in pairs(args.tasks, args.apply)]
    print(f"{len(work)} answers; tokens: {named}; {sum(len(a) for _, _, a in work):,} answer tokens\n")
    variants = [(int(k), adaptive) for k in args.k.split(",") for adaptive in (False, True)]
    kinds = sorted({name.rpartition(" ")[2] for name, _, _ in work}) if args.apply else [""]
    print(
        "| prediction | tokens a step | adaptive | passes | ÷ no drafts | drafted | accepted | thrown away "
        "| alignment µs a step (median / p99 / max) |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for kind in kinds:
        for k, adaptive in variants:
            total = Replayed(step_s=[])
            for name, prediction, answer in work:
                if name.endswith(kind):
                    total.add(replay(prediction, answer, k, adaptive))
            steps = sorted(total.step_s or [0.0])
            p99 = steps[min(len(steps) - 1, int(0.99 * len(steps)))]
            thrown = total.drafted - total.accepted
            print(
                f"| {kind or 'the region'} | {k} | {'yes' if adaptive else 'no'} | {total.passes:,} "
                f"| {total.tokens / total.passes:.2f}× | {total.drafted:,} | {total.accepted:,} "
                f"| {thrown:,} ({thrown / max(total.drafted, 1):.0%}) "
                f"| {statistics.median(steps) * 1e6:.1f} / {p99 * 1e6:.1f} / {steps[-1] * 1e6:.1f} |"
            )


if __name__ == "__main__":
    main()
