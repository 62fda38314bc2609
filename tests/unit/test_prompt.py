"""The prompt and the prediction: what the model is asked, and what it is told to copy."""

from __future__ import annotations

from lsp_server.formats.prompt import REGION_END, REGION_START, SYSTEM_PROMPT, build_prompt
from lsp_server.languages.identify import language_of
from lsp_server.testing.responders import instruction_of, region_of

SOURCE = """import math


def area(r):
    return math.pi * r * r


def circumference(r):
    return 2 * math.pi * r
"""


def prompt_for(text: str, needle: str, **kwargs):
    start = text.index(needle)
    end = text.index("\n\n", start) + 1 if "\n\n" in text[start:] else len(text)
    kwargs.setdefault("instruction", "add type hints")
    kwargs.setdefault("path", "src/geometry.py")
    return build_prompt(text=text, start=start, end=end, **kwargs), text[start:end]


def user_message(prompt) -> str:
    assert [m["role"] for m in prompt.messages] == ["system", "user"]
    return prompt.messages[1]["content"]


def test_region_is_marked_verbatim_inside_the_whole_file() -> None:
    prompt, region = prompt_for(SOURCE, "def area")
    assert region == "def area(r):\n    return math.pi * r * r\n"
    content = user_message(prompt)
    before, after = SOURCE[: SOURCE.index("def area")], SOURCE[SOURCE.index("def area") + len(region) :]
    assert f"{before}{REGION_START}\n{region}{REGION_END}\n{after}" in content
    assert prompt.messages[0]["content"] == SYSTEM_PROMPT
    assert "(shortened around the region)" not in content


def test_prediction_is_the_region_exactly() -> None:
    prompt, region = prompt_for(SOURCE, "def circumference")
    assert prompt.prediction == region
    # What the test backend (and a prompt-lookup server) finds between the markers.
    assert region_of(prompt.messages) == region


def test_instruction_language_and_file_name() -> None:
    prompt, _ = prompt_for(SOURCE, "def area", instruction="  rename r to radius \n")
    content = user_message(prompt)
    assert "Instruction: rename r to radius\n" in content
    assert instruction_of(prompt.messages) == "rename r to radius"
    assert content.startswith("Language: python\nFile: geometry.py\n")
    assert "src/" not in content  # only the file name, not where it lives


def test_language_id_from_the_editor_wins_over_the_extension() -> None:
    assert language_of("a.tsx") == "typescriptreact"
    assert language_of("Makefile") == "plain text"
    assert language_of("A.RS") == "rust"
    assert language_of("a.h", "cpp") == "cpp"
    prompt, _ = prompt_for(SOURCE, "def area", language_id="cython")
    assert user_message(prompt).startswith("Language: cython\n")


def test_diagnostics_are_listed_as_problems_to_fix() -> None:
    diagnostics = ["line 5: undefined name 'pi' (F821)", "line 5: missing return type (ANN201)"]
    prompt, _ = prompt_for(SOURCE, "def area", diagnostics=diagnostics)
    content = user_message(prompt)
    assert (
        "Problems reported in the region, to fix:\n"
        "- line 5: undefined name 'pi' (F821)\n"
        "- line 5: missing return type (ANN201)\n"
    ) in content
    without, _ = prompt_for(SOURCE, "def area")
    assert "Problems reported" not in user_message(without)


def test_region_without_final_newline_still_closes_the_marker_on_its_own_line() -> None:
    text = "x = 1\ny = 2"
    prompt = build_prompt(text=text, start=6, end=len(text), instruction="double y", path="a.py")
    assert f"{REGION_START}\ny = 2\n{REGION_END}\n" in user_message(prompt)
    assert prompt.prediction == "y = 2"


def test_context_of_a_big_file_is_trimmed_to_whole_lines_around_the_region() -> None:
    lines = [f"value_{i:05d} = compute({i})  # line {i}\n" for i in range(5000)]
    text = "".join(lines)
    start = sum(map(len, lines[:2500]))
    end = start + len(lines[2500]) + len(lines[2501])
    prompt = build_prompt(
        text=text, start=start, end=end, instruction="inline compute", path="big.py", context_chars=2000
    )

    content = user_message(prompt)
    assert "The file (shortened around the region)" in content
    assert len(content) < 4000
    assert prompt.prediction == lines[2500] + lines[2501]
    view = content[content.index("value_") : content.index("\nInstruction:")]
    kept = view.split(f"{REGION_START}\n{lines[2500]}{lines[2501]}{REGION_END}\n")
    assert len(kept) == 2
    before, after = kept
    # Whole lines only, and the ones right next to the region.
    assert before.endswith(lines[2499]) and after.startswith(lines[2502])
    assert all(line + "\n" in lines for line in before.splitlines())
    assert all(line + "\n" in lines for line in after.splitlines())
    assert 0 < len(before) <= 1000 and 0 < len(after) <= 1000 + len(lines[0])


def test_context_near_the_start_gives_the_unused_budget_to_the_end() -> None:
    lines = [f"row {i}\n" for i in range(2000)]
    text = "".join(lines)
    prompt = build_prompt(text=text, start=0, end=len(lines[0]), instruction="x", path="t.txt", context_chars=1000)
    content = user_message(prompt)
    after = content[content.index(f"\n{REGION_END}\n") + len(REGION_END) + 2 : content.index("\nInstruction:")]
    assert after.startswith("row 1\n")
    assert 900 < len(after) <= 1001


def test_instruction_comment_line_is_dropped_from_prediction_and_prompt() -> None:
    text = (
        "def f(xs):\n"
        "    # refactor-lsp: use a comprehension\n"
        "    out = []\n"
        "    for x in xs:\n"
        "        out.append(x)\n"
        "    return out\n"
    )
    comment_start = text.index("    # refactor-lsp")
    comment_end = text.index("    out = []")
    prompt = build_prompt(
        text=text,
        start=0,
        end=len(text),
        instruction="use a comprehension",
        path="f.py",
        drop=(comment_start, comment_end),
    )
    expected = "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x)\n    return out\n"
    assert prompt.prediction == expected
    assert "refactor-lsp:" not in user_message(prompt).split("Instruction:")[0]
    assert region_of(prompt.messages) == expected
