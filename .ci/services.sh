#!/usr/bin/env bash
# Start or stop the services the backend tests need: PostgreSQL and the Firestore emulator.
#
#   eval "$(bash .ci/services.sh start)"   # prints the export lines (ANVIL_TEST_POSTGRES_URL, FIRESTORE_EMULATOR_HOST)
#   bash .ci/services.sh stop
#
# PostgreSQL comes from the machine's server binaries (apt-get install postgresql when missing; needs root)
# and runs as the postgres user under a temporary data directory on a free loopback port. The emulator is
# npm's @firestore-emulator/server, installed outside the repository (ANVIL_CI_CACHE, default
# ~/.cache/anvil-ci), run by .ci/firestore-launch-strict.js on a free loopback port. Both are for tests only
# (fsync off, in-memory emulator). MCP Inspector (npm's @modelcontextprotocol/inspector, the current line and
# the v1 line) is installed there too; ANVIL_TEST_MCP_INSPECTOR and ANVIL_TEST_MCP_INSPECTOR_V1 name their CLI
# entry points (run as `node ENTRY --cli URL ...`). So is the official MCP conformance suite with the Node.js 22
# it needs (npm's `node` package ships the binary): ANVIL_TEST_MCP_CONFORMANCE and ANVIL_TEST_NODE22. Two PyPI
# downloads land there too, never installed: the generated image's hash-pinned dependency wheels
# (ANVIL_TEST_IMAGE_WHEELHOUSE, from src/anvil/bundle/image-lock.json, so the image's Python layer builds
# offline in a test) and the google provider's prebuilt CDK bindings (ANVIL_TEST_GOOGLE_PROVIDER_BINDINGS, a
# wheel the Terraform schema test reads as an archive). State lives in ANVIL_CI_STATE (default
# /tmp/anvil-ci-services.env).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${ANVIL_CI_CACHE:-$HOME/.cache/anvil-ci}"
STATE="${ANVIL_CI_STATE:-/tmp/anvil-ci-services.env}"
EMULATOR_VERSION="0.3.15"
INSPECTOR_VERSION="2.12.0"
INSPECTOR_V1_VERSION="1.0.3"
CONFORMANCE_VERSION="0.1.16"
NODE22_VERSION="22"
# hashicorp/google 7.33.0, the oldest version the generated main.tf admits.
PROVIDER_BINDINGS="cdktn-provider-google==19.2.0"
PROVIDER_BINDINGS_FILE="cdktn_provider_google-19.2.0-py3-none-any.whl"
PROVIDER_BINDINGS_SHA256="f3ed92ba1944f7e5f999dc816c1f9584cc12fee84668b65f1511c1b81cdb2749"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

wait_port() {  # wait_port PORT SECONDS
  python3 - "$1" "$2" <<'PY'
import socket, sys, time
port, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
}

start_postgres() {
  local port; port="$(free_port)"
  local data="/tmp/anvil-pg-$port"
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2
  fi
  local bin; bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
  rm -rf "$data"; install -d -o postgres -g postgres -m 700 "$data"
  runuser -u postgres -- "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --no-instructions >/dev/null
  runuser -u postgres -- "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 30 start \
    -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >&2
  {
    echo "ANVIL_CI_PG_BIN=$bin"
    echo "ANVIL_CI_PG_DATA=$data"
    echo "ANVIL_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:$port/postgres"
  } >>"$STATE"
}

start_firestore() {
  mkdir -p "$CACHE/fsemu"
  if [ ! -d "$CACHE/fsemu/node_modules/@firestore-emulator/server" ]; then
    (cd "$CACHE/fsemu" && { [ -f package.json ] || npm init -y >/dev/null; } \
      && npm install --no-audit --no-fund --silent "@firestore-emulator/server@$EMULATOR_VERSION" >&2)
  fi
  local port; port="$(free_port)"
  NODE_PATH="$CACHE/fsemu/node_modules" nohup node "$HERE/firestore-launch-strict.js" "$port" \
    >"$CACHE/firestore-$port.log" 2>&1 &
  local pid=$!
  wait_port "$port" 20 || { cat "$CACHE/firestore-$port.log" >&2; exit 1; }
  {
    echo "ANVIL_CI_FIRESTORE_PID=$pid"
    echo "FIRESTORE_EMULATOR_HOST=127.0.0.1:$port"
  } >>"$STATE"
}

install_inspector() {  # install_inspector VERSION ENTRY: one pinned Inspector in its own folder; prints the entry
  local folder="$CACHE/inspector-$1"
  mkdir -p "$folder"
  if [ ! -f "$folder/node_modules/@modelcontextprotocol/inspector/$2" ]; then
    (cd "$folder" && { [ -f package.json ] || npm init -y >/dev/null; } \
      && npm install --no-audit --no-fund --silent "@modelcontextprotocol/inspector@$1" >&2)
  fi
  echo "$folder/node_modules/@modelcontextprotocol/inspector/$2"
}

start_inspector() {
  {
    echo "ANVIL_TEST_MCP_INSPECTOR=$(install_inspector "$INSPECTOR_VERSION" clients/launcher/build/index.js)"
    echo "ANVIL_TEST_MCP_INSPECTOR_V1=$(install_inspector "$INSPECTOR_V1_VERSION" cli/build/cli.js)"
  } >>"$STATE"
}

start_conformance() {  # the official MCP conformance suite, and the Node.js 22+ it needs (npm's node package)
  local node="$CACHE/node$NODE22_VERSION" suite="$CACHE/conformance-$CONFORMANCE_VERSION"
  mkdir -p "$node" "$suite"
  if [ ! -x "$node/node_modules/.bin/node" ]; then
    (cd "$node" && { [ -f package.json ] || npm init -y >/dev/null; } \
      && npm install --no-audit --no-fund --silent "node@$NODE22_VERSION" >&2)
  fi
  if [ ! -f "$suite/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
    (cd "$suite" && { [ -f package.json ] || npm init -y >/dev/null; } \
      && npm install --no-audit --no-fund --silent "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2)
  fi
  {
    echo "ANVIL_TEST_NODE22=$node/node_modules/.bin/node"
    echo "ANVIL_TEST_MCP_CONFORMANCE=$suite/node_modules/@modelcontextprotocol/conformance/dist/index.js"
  } >>"$STATE"
}

fetch_image_wheels() {  # the image's pinned dependency wheels, hash-checked against the lock
  local folder="$CACHE/image-wheelhouse"
  mkdir -p "$folder"
  python3 - "$HERE/../src/anvil/bundle/image-lock.json" "$folder" <<'PY' >&2
import json, os, subprocess, sys, tempfile
lock, folder = json.load(open(sys.argv[1])), sys.argv[2]
wanted = {name: pin for name, pin in lock["packages"].items() if pin["file"] not in os.listdir(folder)}
if wanted:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as pins:
        pins.writelines(f"{name}=={pin['version']} --hash=sha256:{pin['sha256']}\n" for name, pin in wanted.items())
    target = lock["target"]
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--require-hashes", "--python-version", target["python"], "--implementation", "cp",
               "--abi", target["abi"], "--dest", folder, "-r", pins.name]
    for platform in target["platforms"]:
        command += ["--platform", platform]
    subprocess.run(command, check=True)
    os.unlink(pins.name)
PY
  echo "ANVIL_TEST_IMAGE_WHEELHOUSE=$folder" >>"$STATE"
}

fetch_provider_bindings() {  # one wheel, hash-pinned; the test reads the provider schema out of it
  local folder="$CACHE/provider-bindings"
  mkdir -p "$folder"
  local wheel="$folder/$PROVIDER_BINDINGS_FILE"
  if ! echo "$PROVIDER_BINDINGS_SHA256  $wheel" | sha256sum --check --status 2>/dev/null; then
    rm -f "$wheel"
    echo "$PROVIDER_BINDINGS --hash=sha256:$PROVIDER_BINDINGS_SHA256" >"$folder/requirements.txt"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
      -r "$folder/requirements.txt" --dest "$folder" >&2
  fi
  echo "ANVIL_TEST_GOOGLE_PROVIDER_BINDINGS=$wheel" >>"$STATE"
}

start() {
  : >"$STATE"
  start_postgres
  start_firestore
  start_inspector
  start_conformance
  fetch_image_wheels
  fetch_provider_bindings
  grep -E '^(ANVIL_TEST_POSTGRES_URL|FIRESTORE_EMULATOR_HOST|ANVIL_TEST_MCP_INSPECTOR(_V1)?|ANVIL_TEST_NODE22|ANVIL_TEST_MCP_CONFORMANCE|ANVIL_TEST_IMAGE_WHEELHOUSE|ANVIL_TEST_GOOGLE_PROVIDER_BINDINGS)=' \
    "$STATE" | sed 's/^/export /'
}

stop() {
  [ -f "$STATE" ] || return 0
  # shellcheck disable=SC1090
  . "$STATE"
  if [ -n "${ANVIL_CI_FIRESTORE_PID:-}" ]; then kill "$ANVIL_CI_FIRESTORE_PID" 2>/dev/null || true; fi
  if [ -n "${ANVIL_CI_PG_DATA:-}" ]; then
    runuser -u postgres -- "$ANVIL_CI_PG_BIN/pg_ctl" -D "$ANVIL_CI_PG_DATA" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$ANVIL_CI_PG_DATA"
  fi
  rm -f "$STATE"
}

"${1:-start}"
