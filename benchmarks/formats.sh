#!/usr/bin/env bash
# `make bench-formats`: the edit formats side by side on the loopback backend as a perfect model for
# the corpus (SIMULATED speed; benchmarks/README.md, "Edit formats").
#
#   FORMATS_KIND=openai   one fake that drafts from the request's `prediction` field (OpenAI);
#   FORMATS_KIND=vllm     a speculating fake that drafts from the prompt and its answer so far (vLLM
#                         n-gram prompt lookup), and a plain one without speculation as the baseline.
# Settings, from the environment: FORMATS_KIND (openai), FORMATS_PORT (8240; vllm also uses the next),
# FORMATS_STEP_MS (5: one forward pass), FORMATS_DRAFT_LEN (8), FORMATS_PREFILL (0: prompt tokens read
# in one pass's time; 0 reads the prompt in no time), PYTHON (python3), REFACTOR_LSP (refactor-lsp).
# Arguments go to `refactor-lsp bench` (e.g. --repeat 3 --markdown formats.md --json formats.json).
set -euo pipefail
KIND=${FORMATS_KIND:-openai}
PORT=${FORMATS_PORT:-8240}
STEP_MS=${FORMATS_STEP_MS:-5}
DRAFT_LEN=${FORMATS_DRAFT_LEN:-8}
PREFILL=${FORMATS_PREFILL:-0}
PY=${PYTHON:-python3}
CLI=${REFACTOR_LSP:-refactor-lsp}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cfg=$(mktemp --suffix=.toml)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -f "$cfg"; }
trap cleanup EXIT

fake() {  # PORT ARGS...: start a fake for the corpus, in the background
  local port=$1; shift
  "$PY" -m lsp_server.testing.fake_backend --corpus "$HERE/tasks" --step-ms "$STEP_MS" --draft-len "$DRAFT_LEN" \
    --prefill-tokens-per-pass "$PREFILL" --port "$port" "$@" >/dev/null &
  pids+=($!)
  for _ in $(seq 100); do
    "$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v1/models')" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "formats.sh: the fake on :$port did not start" >&2
  exit 1
}

backend() {  # NAME TYPE PORT
  printf '[backends.%s]\ntype = "%s"\nbase_url = "http://127.0.0.1:%s/v1"\nmodel = "fake-model"\n\n' "$1" "$2" "$3"
}

case "$KIND" in
  openai)
    fake "$PORT" --kind openai
    { echo 'default_backend = "sim"'; backend sim openai "$PORT"; } >"$cfg"
    baseline=()
    ;;
  vllm)
    fake "$PORT" --kind vllm
    fake "$((PORT + 1))" --kind vllm --no-speculation
    { echo 'default_backend = "sim"'; backend sim vllm "$PORT"; backend sim-plain vllm "$((PORT + 1))"; } >"$cfg"
    baseline=(--baseline-backend sim-plain)
    ;;
  *)
    echo "formats.sh: FORMATS_KIND must be openai or vllm, not '$KIND'" >&2
    exit 2
    ;;
esac
note="SIMULATED: loopback fake ($KIND), ${STEP_MS} ms a pass, drafts of $DRAFT_LEN, prompt read at ${PREFILL} tokens a pass (0: free)"
"$CLI" bench --config "$cfg" --backend sim "${baseline[@]}" --edit-format region,hunks,auto --note "$note" "$@"
