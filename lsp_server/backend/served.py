"""Which model a backend serves, as its `/v1/models` says: enough to know the local demo's small model,
whose refused answers need other advice than "run it again": its answers differ from run to run (the
server is not deterministic, as `bench` reports), but a model that small seldom gives an edit you can use.

The demo (`benchmarks/local_vllm.sh`) serves its weights from `VLLM_HOME/models/smollm2` (or `gemma3`)
under the name `local`, and vLLM's entry for a model says where its weights are (`root`). Only the
backend's own answer is read, never a name a config sets: a repository's settings cannot make the user
be told their model is the demo's. What is said names our own label for the model, never the backend's
text.
"""

from __future__ import annotations

import logging
from pathlib import PurePosixPath
from typing import Any

from ..config.schema import BackendConfig
from .window import fetch_json, model_entry, models_url

log = logging.getLogger(__name__)

# benchmarks/local_vllm.sh: LOCAL_VLLM_MODEL's folder under models/, served as `local`.
DEMO_FOLDERS = {"smollm2": "SmolLM2-135M", "gemma3": "Gemma 3 270M"}
DEMO_SERVED_NAME = "local"
# The same weights served under their own names (Hugging Face's), by the demo's script or anyone's.
SMALL_NAMES = {"smollm2-135m": "SmolLM2-135M", "gemma-3-270m": "Gemma 3 270M"}
MAX_NAME_CHARS = 512  # a path or a name longer than this is no model's: not read


def small_model_of(entry: Any) -> str | None:
    """Our label for the demo's small model when a `/v1/models` entry is it, else None."""
    if not isinstance(entry, dict):
        return None
    served, root = entry.get("id"), entry.get("root")
    names = [n for n in (root, served) if isinstance(n, str) and len(n) <= MAX_NAME_CHARS]
    for name in names:
        path = PurePosixPath(name.lower())
        if served == DEMO_SERVED_NAME and path.parent.name == "models" and path.name in DEMO_FOLDERS:
            return DEMO_FOLDERS[path.name]
        for small, label in SMALL_NAMES.items():
            if small in path.name:
                return label
    return None


async def small_model_served(backend: BackendConfig) -> str | None:
    """Our label for the model the backend serves as `backend.model`, when it is the demo's small model;
    None when it is another, or the backend does not say (OpenAI is not asked). Never raises."""
    if backend.type not in ("vllm", "openai-compatible"):
        return None
    try:
        return small_model_of(model_entry(await fetch_json(models_url(backend), backend), backend.model))
    except Exception as exc:  # the advice is a courtesy: without it, the message is the usual one
        log.debug("which model %s serves is unknown: %s: %s", backend.base_url, type(exc).__name__, exc)
        return None


_ADVICE_START = "this backend serves "
_ADVICE_MARK = ", the local demo's model: "


def without_small_model_advice(reason: str) -> tuple[str, str | None]:
    """A refusal's reason without the demo advice that with_small_model_advice added, and that advice;
    (reason, None) when it has none. A request of several targets lists their reasons and says the
    advice once: it is about the backend, not about any one definition."""
    for joint in (" — ", "; "):
        problem, found, rest = reason.partition(joint + _ADVICE_START)
        if found and _ADVICE_MARK in rest.partition(";")[0]:
            return problem, _ADVICE_START + rest
    return reason, None


def with_small_model_advice(message: str, label: str) -> str:
    """A refusal's message for an answer from the demo's small model: "run it again" seldom helps a model
    too small for the edit (another run gives another answer, rarely a usable one), so that advice gives
    way; other advice (a larger window) stays."""
    advice = (
        f"{_ADVICE_START}{label}{_ADVICE_MARK}too small for most edits; its answers differ "
        "from run to run, but running it again seldom gives one you can use; for edits you can use, point "
        'refactor-lsp at a real model (README, "A real model")'
    )
    problem, dash, given = message.partition(" — ")
    if dash and "run it again" in given:
        return f"{problem}{dash}{advice}"
    return f"{message.rstrip('. ')}; {advice}"
