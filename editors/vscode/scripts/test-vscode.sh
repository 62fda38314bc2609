#!/usr/bin/env bash
# `make test-vscode`: install the test environment (idempotent), package the .vsix, run the e2e test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-test-env.sh
npm run --silent typecheck
npm run --silent test:unit
npm run --silent package
node test/e2e.mjs
