#!/usr/bin/env bash
# `make bench-formats`: the edit formats side by side on the loopback backend answering the corpus as
# a perfect model would, paced as a backend profile (SIMULATED speed; benchmarks/README.md, "Edit
# formats" and "Backend profiles").
#
#   FORMATS_PROFILE=NAME  how fast the prediction pays (lsp_server/testing/profiles.py): perfect (the upper
#                         bound), local-vllm-cpu, gpu-vllm-ngram, openai-predicted; each names its kind;
#   FORMATS_KIND=openai   one fake that drafts from the request's `prediction` field (OpenAI);
#   FORMATS_KIND=vllm     a speculating fake that drafts from the prompt and its answer so far (vLLM
#                         n-gram prompt lookup), and a plain one without speculation as the baseline;
#                         FORMATS_PROPOSER=1: the speculating one plays a vLLM with refactor-lsp's proposer
#                         instead (it drafts from the prediction each request sends in `vllm_xargs`).
# Settings, from the environment: FORMATS_PROFILE (perfect), FORMATS_KIND (the profile's: openai for perfect),
# FORMATS_PORT (8240; vllm also uses the next), FORMATS_STEP_MS (5: one forward pass), and for the perfect
# profile only FORMATS_DRAFT_LEN (8) and FORMATS_PREFILL (0: prompt tokens read in one pass's time; 0 reads
# the prompt in no time), PYTHON (python3), REFACTOR_LSP (refactor-lsp).
# FORMATS_BENCH=apply (`make bench-apply`) runs `bench --kind apply` on the same fakes instead: each task's change
# as a lazy snippet, merged scoped with and without the prediction and into the whole file.
# Arguments go to `refactor-lsp bench` (e.g. --repeat 3 --markdown formats.md --json formats.json).
set -euo pipefail
PROFILE=${FORMATS_PROFILE:-perfect}
case "$PROFILE" in
  openai-predicted) KIND=${FORMATS_KIND:-openai} ;;
  local-vllm-cpu | gpu-vllm-ngram) KIND=${FORMATS_KIND:-vllm} ;;
  *) KIND=${FORMATS_KIND:-openai} ;;
esac
PORT=${FORMATS_PORT:-8240}
STEP_MS=${FORMATS_STEP_MS:-5}
tuning=()  # the perfect profile's knobs; a calibrated profile is calibrated as a whole
if [ -n "${FORMATS_DRAFT_LEN:-}" ]; then tuning+=(--draft-len "$FORMATS_DRAFT_LEN"); fi
if [ -n "${FORMATS_PREFILL:-}" ]; then tuning+=(--prefill-tokens-per-pass "$FORMATS_PREFILL"); fi
PY=${PYTHON:-python3}
CLI=${REFACTOR_LSP:-refactor-lsp}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cfg=$(mktemp --suffix=.toml)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -f "$cfg"; }
trap cleanup EXIT

fake() {  # PORT ARGS...: start a fake for the corpus, in the background
  local port=$1; shift
  "$PY" -m lsp_server.testing.fake_backend --corpus "$HERE/tasks" --step-ms "$STEP_MS" --profile "$PROFILE" \
    "${tuning[@]}" --port "$port" "$@" >/dev/null &
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
    proposer=()
    if [ -n "${FORMATS_PROPOSER:-}" ]; then proposer=(--proposer); fi
    fake "$PORT" --kind vllm "${proposer[@]}"
    fake "$((PORT + 1))" --kind vllm --no-speculation
    { echo 'default_backend = "sim"'; backend sim vllm "$PORT"; backend sim-plain vllm "$((PORT + 1))"; } >"$cfg"
    baseline=(--baseline-backend sim-plain)
    ;;
  *)
    echo "formats.sh: FORMATS_KIND must be openai or vllm, not '$KIND'" >&2
    exit 2
    ;;
esac
note="SIMULATED: loopback fake ($KIND${FORMATS_PROPOSER:+, with the refactor-lsp proposer}), profile $PROFILE, ${STEP_MS} ms a pass${tuning:+ (${tuning[*]})}"
what=(--edit-format region,hunks,auto)
if [ "${FORMATS_BENCH:-formats}" = apply ]; then what=(--kind apply); fi
"$CLI" bench --config "$cfg" --backend sim "${baseline[@]}" "${what[@]}" --note "$note" "$@"
