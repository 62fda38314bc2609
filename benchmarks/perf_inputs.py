"""Inputs for benchmarks/perf.py: realistic Python files and adversarial old → new pairs.

Everything is generated from a fixed seed, so two runs measure the same text.
"""

from __future__ import annotations

import random

FUNCTION_LINES = 30  # about the size of one function in the generated files


def function(i: int) -> list[str]:
    """One function of FUNCTION_LINES lines whose local names (`total_<i>`, ...) appear nowhere else."""
    return [
        f"def process_batch_{i}(items, limit={i % 17 + 3}, scale=1.5):\n",
        f'    """Process batch {i}: keep the values over the limit and sum them up."""\n',
        f"    total_{i} = 0\n",
        f"    kept_{i} = []\n",
        "    for index, value in enumerate(items):\n",
        "        if value is None:\n",
        "            continue\n",
        "        if value > limit:\n",
        f"            kept_{i}.append(value * scale)\n",
        f"            total_{i} += value * {i % 9 + 1}\n",
        "        elif index % 3 == 0:\n",
        f"            total_{i} -= index\n",
        "        else:\n",
        f"            total_{i} += int(value // 2)\n",
        f"    if not kept_{i}:\n",
        f"        return {{'batch': {i}, 'total': total_{i}, 'kept': 0}}\n",
        f"    average_{i} = sum(kept_{i}) / len(kept_{i})\n",
        f"    spread_{i} = max(kept_{i}) - min(kept_{i})\n",
        f"    report_{i} = {{\n",
        f"        'batch': {i},\n",
        f"        'total': total_{i},\n",
        f"        'kept': len(kept_{i}),\n",
        f"        'average': round(average_{i}, 3),\n",
        f"        'spread': spread_{i},\n",
        "    }\n",
        f"    log.debug('batch %d: %r', {i}, report_{i})\n",
        f"    return report_{i}\n",
        "\n",
        "\n",
    ][:FUNCTION_LINES] + ["\n"] * max(0, FUNCTION_LINES - 29)


HEADER = [
    '"""A generated module: many small functions, as in a real code base."""\n',
    "\n",
    "import logging\n",
    "\n",
    "log = logging.getLogger(__name__)\n",
    "\n",
    "\n",
]


def python_file(n_lines: int) -> str:
    """A Python module of exactly n_lines lines made of distinct functions."""
    lines = list(HEADER)
    i = 0
    while len(lines) < n_lines:
        lines.extend(function(i))
        i += 1
    lines = lines[:n_lines]
    if not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return "".join(lines)


def function_count(n_lines: int) -> int:
    return (n_lines - len(HEADER)) // FUNCTION_LINES


def change_lines(text: str, fraction: float, seed: int = 7, indels: bool = True) -> str:
    """`fraction` of the lines changed, scattered: mostly edited in place, some inserted or deleted."""
    rng = random.Random(seed)
    lines = text.splitlines(keepends=True)
    count = max(1, int(len(lines) * fraction))
    picked = sorted(rng.sample(range(len(lines)), count), reverse=True)
    for n, i in enumerate(picked):
        kind = n % 10 if indels else 0
        if kind == 8:
            lines.insert(i, f"    # inserted note {n}\n")
        elif kind == 9:
            del lines[i]
        else:
            lines[i] = lines[i].rstrip("\n") + f"  # changed {n}\n"
    return "".join(lines)


def rewrite_all(text: str) -> str:
    """Every line changed (a full reformat)."""
    return "".join(f"{line.rstrip(chr(10))}  # v2\n" for line in text.splitlines(keepends=True))


def identical_lines(n_lines: int) -> str:
    return "    pass\n" * n_lines


def alternating(text: str) -> str:
    """Every other line changed."""
    lines = text.splitlines(keepends=True)
    return "".join(line if i % 2 else line.rstrip("\n") + " # x\n" for i, line in enumerate(lines))


def shuffled_blocks(text: str, seed: int = 3) -> str:
    """Functions moved around (a reorder): many equal lines, in a different order."""
    rng = random.Random(seed)
    blocks = text.split("\n\n\n")
    rng.shuffle(blocks)
    return "\n\n\n".join(blocks)


def small_function(i: int) -> list[str]:
    """A short function (7 lines), for a file that fits a small model's context."""
    return [
        f"def scale_{i}(values, factor={i % 5 + 2}):\n",
        f"    total_{i} = 0\n",
        "    for value in values:\n",
        f"        total_{i} += value * factor\n",
        f"    return total_{i}\n",
        "\n",
        "\n",
    ]


def small_python_file(functions: int) -> str:
    """A module of `functions` short functions (7 lines each)."""
    return "".join(line for i in range(functions) for line in small_function(i))


def js_function(i: int) -> list[str]:
    """A JavaScript function of FUNCTION_LINES lines (strings, a template literal, a regex, nested blocks)."""
    return [
        f"function processBatch{i}(items, limit = {i % 17 + 3}) {{\n",
        f"  // Keep the values over the limit and sum them up (batch {i}).\n",
        f"  let total{i} = 0;\n",
        f"  const kept{i} = [];\n",
        "  for (const [index, value] of items.entries()) {\n",
        "    if (value === null || value === undefined) {\n",
        "      continue;\n",
        "    }\n",
        "    if (value > limit) {\n",
        f"      kept{i}.push(value * 1.5);\n",
        f"      total{i} += value * {i % 9 + 1};\n",
        "    } else if (index % 3 === 0) {\n",
        f"      total{i} -= index;\n",
        "    } else {\n",
        f"      total{i} += Math.floor(value / 2);\n",
        "    }\n",
        "  }\n",
        f"  if (!kept{i}.length) {{\n",
        f"    return {{ batch: {i}, total: total{i}, kept: 0 }};\n",
        "  }\n",
        f"  const label{i} = `batch ${{{i}}}: ${{kept{i}.length}} kept`;\n",
        f"  const valid{i} = /^[a-z]+\\d*$/i.test(label{i}) ? 'yes' : \"no\";\n",
        f"  const report{i} = {{\n",
        f"    batch: {i},\n",
        f"    total: total{i},\n",
        f"    kept: kept{i}.length,\n",
        f"    label: label{i} + valid{i},\n",
        "  };\n",
        f"  return report{i};\n",
        "}\n",
    ]


def js_file(n_lines: int) -> str:
    """A JavaScript module of about n_lines lines made of distinct functions."""
    lines = []
    i = 0
    while len(lines) < n_lines:
        lines.extend([*js_function(i), "\n"])
        i += 1
    return "".join(lines)
