#!/usr/bin/env bash
# Installs what the test suite needs beyond the Python environment: the server binaries the
# integration tests start on 127.0.0.1 (helikon.testing.servers), Debian's Chromium for the
# browser tests, tmux for the REPL tests, Node.js, and the real MCP peers from the npm registry (tests/npm_peers, pinned
# by its package-lock.json), and the contract oracles' own virtual environments (tests/oracles: AWS's
# AgentCore app, which pins an older pydantic). `make test` runs this first, and `.ci/run` runs `make test`, so the
# README's command and CI share one install step.
#
# Only missing packages are installed (apt-get, as root or through passwordless sudo). No
# system service is started: a policy-rc.d that refuses every start is in place while the
# packages install, and the suite starts its own throwaway servers.
set -euo pipefail

missing=()
if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && ! command -v initdb >/dev/null 2>&1; then
  missing+=(postgresql)
fi
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
# Headless Chromium for the browser tests (tests/browser.py): Playwright drives Debian's build.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# A real terminal for the REPL tests (tests/integration/test_cli_repl.py): tmux runs `helikon repl`.
command -v tmux >/dev/null 2>&1 || missing+=(tmux)

install_npm_peers() {
  # npm ci reinstalls from the lock file; skip it when node_modules already matches the lock.
  local peers
  peers="$(dirname "$0")/../tests/npm_peers"
  if [ -f "$peers/node_modules/.package-lock.json" ] && [ "$peers/node_modules/.package-lock.json" -nt "$peers/package-lock.json" ]; then
    return 0
  fi
  echo "test-deps: installing the MCP peers (npm ci in tests/npm_peers)"
  if ! npm ci --prefix "$peers" --no-audit --no-fund --loglevel=error >/dev/null; then
    echo "test-deps: npm could not install tests/npm_peers (the registry must be reachable)" >&2
    exit 1
  fi
}

install_oracles() {
  # Each oracle is a peer's own package in a virtual environment of its own, never a dependency of
  # helikon; reinstalled only when its requirements changed.
  local oracle
  oracle="$(dirname "$0")/../tests/oracles/agentcore"
  if [ -f "$oracle/.venv/installed" ] && [ "$oracle/.venv/installed" -nt "$oracle/requirements.txt" ]; then
    return 0
  fi
  echo "test-deps: installing the AgentCore oracle (tests/oracles/agentcore/.venv)"
  rm -rf "$oracle/.venv"
  if ! { uv venv -q "$oracle/.venv" && VIRTUAL_ENV="$oracle/.venv" uv pip install -q -r "$oracle/requirements.txt"; }; then
    echo "test-deps: uv could not install tests/oracles/agentcore (PyPI must be reachable)" >&2
    exit 1
  fi
  touch "$oracle/.venv/installed"
}

if [ "${#missing[@]}" -eq 0 ]; then
  install_npm_peers
  install_oracles
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "test-deps: missing ${missing[*]}; install them (apt-get install ${missing[*]}) or run as root" >&2
    exit 1
  fi
  sudo=(sudo -n)
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: missing ${missing[*]} and no apt-get here; install them with this system's package manager" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod 755 "$policy"
  trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi
echo "test-deps: installing ${missing[*]} (apt-get)"
if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "test-deps: apt-get could not install ${missing[*]} (output above)" >&2
  exit 1
fi
rm -f "$log"
install_npm_peers
install_oracles
