"""Which speculation method the demo should run: n-gram against suffix decoding, each server alone.

`make demo` measures a speculating server against a plain one while both run on the same cores. To
compare speculation methods fairly, this runs one server at a time (plain, n-gram, suffix decoding,
suffix decoding without its cache of earlier answers; one order, then its reverse, round by round, so
drift and other users' load fall on all alike) and measures each with `refactor-lsp bench` on the same
tasks, max tokens and repetitions. Both of bench's modes go to the one server that is up (two backend
names for it), so every run of a round is that server's.

    python benchmarks/speculation_rounds.py --rounds 2 --repeat 1   # 64 runs; 1-2 hours on a busy 2-core machine
    SPEC_PORT=8100 PLAIN_PORT=8101 VLLM_HOME=... python benchmarks/speculation_rounds.py \
        --servers baseline,ngram,suffix,prediction --out benchmarks/results/proposer

Writes each bench's JSON and a summary (per round and overall: medians of the latency and of the
decoding time after the first token, ratios, acceptance, the load average and the CPU other
processes used while measuring) to benchmarks/results/speculation/.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCAL_VLLM = HERE / "local_vllm.sh"
# The ports local_vllm.sh serves on (SPEC_PORT, PLAIN_PORT): another pair may be up on the default ones.
SPEC_PORT, PLAIN_PORT = int(os.environ.get("SPEC_PORT", "8000")), int(os.environ.get("PLAIN_PORT", "8001"))
PROPOSER = "lsp_server.proposer.vllm_adapter.PredictionProposer"


def _proposer(tokens: int, variant: str = "") -> str:
    """The custom_class config of refactor-lsp's proposer, or of a variant ("Adaptive", "Hybrid")."""
    name = PROPOSER.replace("PredictionProposer", f"{variant}PredictionProposer")
    return f'{{"method":"custom_class","model":"{name}","num_speculative_tokens":{tokens}}}'


# name: (local_vllm.sh role, SPEC_METHOD, SPEC_CONFIG or "" for the method's own, port). Suffix decoding
# also drafts from a cache of earlier answers, and the bench repeats each task: "suffix-nocache" turns that
# cache off, so that what is left is what a first request gets. "prediction": refactor-lsp's proposer,
# drafting from the prediction the bench sends in `vllm_xargs` (lsp_server/proposer), 6 tokens a step as the
# others; "prediction-10" drafts 10, "prediction-adaptive" fewer right after the answer leaves the prediction,
# "prediction-hybrid" by prompt lookup where the answer is off the prediction (instead of nothing).
SERVERS = {
    "baseline": ("plain", "ngram", "", PLAIN_PORT),
    "ngram": ("spec", "ngram", "", SPEC_PORT),
    "suffix": ("spec", "suffix", "", SPEC_PORT),
    "suffix-nocache": (
        "spec",
        "suffix",
        '{"method":"suffix","num_speculative_tokens":6,"suffix_decoding_max_cached_requests":0}',
        SPEC_PORT,
    ),
    "prediction": ("spec", "prediction", "", SPEC_PORT),
    "prediction-10": ("spec", "prediction", _proposer(10), SPEC_PORT),
    "prediction-adaptive": ("spec", "prediction", _proposer(10, "Adaptive"), SPEC_PORT),
    "prediction-hybrid": ("spec", "prediction", _proposer(6, "Hybrid"), SPEC_PORT),
}
DEMO_TASKS = [
    "py-metrics-loops-to-comprehensions",
    "js-fetch-add-timeout-option",
    "py-deps-recursive-to-iterative",
    "ts-workflow-rename",
]
TICKS = os.sysconf("SC_CLK_TCK")


def busy_ticks() -> int:
    """CPU time every process on the machine has used, all cores (ticks)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4]  # less idle and iowait


def group_ticks(pgid: int) -> int:
    """CPU time of one process group (a server started by local_vllm.sh leads its own)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            after_name = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(after_name[2]) == pgid:
            total += int(after_name[11]) + int(after_name[12])
    return total


def children_ticks() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * TICKS


def measure(name: str, index: int, position: int, args: argparse.Namespace, out: Path) -> dict[str, object]:
    role, method, spec_config, port = SERVERS[name]
    env = {**os.environ, "SPEC_METHOD": method, "SPEC_CONFIG": spec_config}
    subprocess.run(["bash", str(LOCAL_VLLM), "serve", role], env=env, check=True)
    config = out / "bench.toml"
    base = f'type = "vllm"\nbase_url = "http://127.0.0.1:{port}/v1"\nmodel = "local"\n'
    # On a machine other work shares, a first token can take minutes: the editor's timeouts would
    # drop the very runs that show the load.
    timeouts = "[refactor]\ntimeout_s = 900\nfirst_token_timeout_s = 600\nidle_timeout_s = 300\n"
    config.write_text(f"{timeouts}\n[backends.alone]\n{base}\n[backends.alone-again]\n{base}")
    report = out / f"round{index}-{name}.json"
    command = [sys.executable, "-m", "lsp_server", "bench", "--config", str(config)]
    command += ["--backend", "alone", "--baseline-backend", "alone-again", "--max-tokens", str(args.max_tokens)]
    command += [f"--task={task}" for task in args.task] + ["--repeat", str(args.repeat), "--json", str(report)]
    command += ["--note", f"{name} alone (round {index}); both modes are this one server"]
    pgid = int((Path(os.environ.get("VLLM_HOME", HERE / ".vllm")) / "run" / f"{role}-{port}.pid").read_text())
    loads: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(5):
            loads.append(float(Path("/proc/loadavg").read_text().split()[0]))

    sampler = threading.Thread(target=sample, daemon=True)
    start = (time.monotonic(), busy_ticks(), group_ticks(pgid), children_ticks())
    sampler.start()
    with open(out / f"round{index}-{name}.txt", "w") as log:
        # bench exits 1 when a run failed; the others still count, and the failures are counted below.
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
    done.set()
    seconds = time.monotonic() - start[0]
    ours = group_ticks(pgid) - start[2] + children_ticks() - start[3]
    others = max(0.0, busy_ticks() - start[1] - ours)
    subprocess.run(["bash", str(LOCAL_VLLM), "stop"], check=True)
    every_run = json.loads(report.read_text())["runs"]
    runs = [run for run in every_run if run["stats"]]
    return {
        "failed": [run["message"] for run in every_run if not run["stats"]],
        "round": index,
        "position": position,
        "server": name,
        "seconds": round(seconds, 1),
        "load_avg_1m": [min(loads, default=0), statistics.median(loads or [0]), max(loads, default=0)],
        "others_cores": round(others / TICKS / seconds, 2),
        "runs": [
            {
                "task": run["task"],
                "latency_ms": run["stats"]["latency_ms"],
                "ttft_ms": run["stats"]["ttft_ms"],
                "tokens": run["stats"]["completion_tokens"],
                "accepted": run["stats"]["accepted_prediction_tokens"] or 0,
                "rejected": run["stats"]["rejected_prediction_tokens"] or 0,
            }
            for run in runs
        ],
    }


def summary(measured: list[dict], names: list[str]) -> str:
    """Markdown: each server in each round, each task over all rounds, and acceptance. Times in seconds:
    the latency (request sent → stream ended) and, in brackets, the decoding after the first token,
    where speculation acts (the prefill before it is the same work for every server)."""

    def median_s(name: str, round_: int | None = None, task: str | None = None) -> tuple[float, float]:
        runs = [
            run
            for m in measured
            if m["server"] == name and round_ in (None, m["round"])
            for run in m["runs"]
            if task in (None, run["task"])
        ]
        latency = statistics.median(run["latency_ms"] for run in runs) / 1000
        return latency, statistics.median(run["latency_ms"] - run["ttft_ms"] for run in runs) / 1000

    def ratio(base: tuple[float, float], this: tuple[float, float]) -> str:
        return f"{base[0] / this[0]:.2f}× ({base[1] / this[1]:.2f}×)"

    baseline = names[0]
    lines = [
        "| round | order | server | runs (failed) | latency s (decoding s) | baseline ÷ this "
        "| load avg 1 min (min / median / max) | other processes, cores busy |",
        "|---:|---:|---|---:|---:|---:|---|---:|",
    ]
    for m in measured:
        mine = median_s(m["server"], round_=m["round"])
        low, mid, high = m["load_avg_1m"]
        lines.append(
            f"| {m['round']} | {m['position']} | {m['server']} | {len(m['runs'])} ({len(m.get('failed', []))}) "
            f"| {mine[0]:.1f} ({mine[1]:.1f}) "
            f"| {ratio(median_s(baseline, round_=m['round']), mine)} | {low:.2f} / {mid:.2f} / {high:.2f} "
            f"| {m['others_cores']:.2f} |"
        )
    tasks = [*dict.fromkeys(run["task"] for m in measured for run in m["runs"])]
    lines += ["", "| task | " + " | ".join([*(f"{n}, s" for n in names), *(f"{n} ×" for n in names[1:])]) + " |"]
    lines.append("|---|" + "---:|" * (2 * len(names) - 1))
    for task in [*tasks, None]:
        cells = [median_s(n, task=task) for n in names]
        shown = [f"{c[0]:.1f} ({c[1]:.1f})" for c in cells] + [ratio(cells[0], c) for c in cells[1:]]
        lines.append(f"| {task or 'all tasks'} | " + " | ".join(shown) + " |")
    # A step (forward pass) writes the tokens of its draft it accepted and one more: the steps of a run are its
    # output tokens less the accepted ones (the first token, from the prefill, counted as a step too).
    lines += [
        "",
        "| server | runs | median TTFT s | output tokens | accepted / drafted | acceptance | drafted a step "
        "| tokens a step |",
    ]
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in names:
        runs = [run for m in measured if m["server"] == n for run in m["runs"]]
        accepted = sum(r["accepted"] for r in runs)
        drafted = accepted + sum(r["rejected"] for r in runs)
        tokens = sorted(r["tokens"] for r in runs)
        steps = sum(tokens) - accepted
        ttft = statistics.median(r["ttft_ms"] for r in runs) / 1000
        rate = f"{accepted / drafted:.0%}" if drafted else "–"
        lines.append(
            f"| {n} | {len(runs)} | {ttft:.1f} | {tokens[0]}–{tokens[-1]} | {accepted} / {drafted} | {rate} "
            f"| {drafted / steps:.2f} | {sum(tokens) / steps:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2, help="bench --repeat: each round runs each task 2× this")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--task", action="append", help="default: the demo's four tasks")
    parser.add_argument(
        "--servers",
        default="baseline,ngram,suffix,suffix-nocache",
        help=f"the first is the baseline; of {', '.join(SERVERS)}",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results" / "speculation")
    parser.add_argument("--resume", action="store_true", help="keep the rounds already in OUT/summary.json")
    args = parser.parse_args()
    args.task = args.task or DEMO_TASKS
    names = args.servers.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["bash", str(LOCAL_VLLM), "stop"], check=True)  # nothing else of ours shares the cores
    # --resume: go on after the rounds an interrupted run finished (they are in summary.json).
    done_file = args.out / "summary.json"
    measured: list[dict] = json.loads(done_file.read_text()) if args.resume and done_file.exists() else []
    for index in range(max((m["round"] for m in measured), default=0) + 1, args.rounds + 1):
        # One order, then the reverse (ABCD, DCBA, ...): a drift over the run falls on every server alike.
        order = names if index % 2 else names[::-1]
        for position, name in enumerate(order, 1):
            measured.append(measure(name, index, position, args, args.out))
            print(f"round {index}: {name} measured", file=sys.stderr, flush=True)
        (args.out / "summary.json").write_text(json.dumps(measured, indent=1) + "\n")
        (args.out / "summary.md").write_text(summary(measured, names))
    print(summary(measured, names))


if __name__ == "__main__":
    main()
