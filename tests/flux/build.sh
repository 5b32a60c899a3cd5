#!/usr/bin/env bash
# Builds flux-render (tests/flux/main.go: Flux's own Kustomization render) once per machine.
#
#   tests/flux/build.sh          build unless cached; print the binary's path (last line)
#   tests/flux/build.sh --path   print where the binary is (or would be)
#
# The binary goes to ${XDG_CACHE_HOME:-$HOME/.cache}/topogate/flux/KEY/flux-render, KEY the
# sha256 of this module's go.mod, go.sum, main.go and the build recipe: the same inputs give the
# same path, so a second run only hashes four files. A build goes to a temporary directory
# renamed into place, so an interrupted one leaves nothing that looks finished. Exit 3 without
# Go (the Flux oracle test then skips, unless TOPOGATE_REQUIRE_GITOPS_ORACLES=1).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
recipe="CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly go build -trimpath -p 2 -ldflags '-s -w'"
key="$( { cat go.mod go.sum main.go; echo "$recipe"; } | sha256sum | cut -c1-16)"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/topogate/flux/$key"
bin="$dir/flux-render"

if [ "${1:-}" = "--path" ]; then
  echo "$bin"
  exit 0
fi
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "flux: no go on PATH: flux-render not built; the Flux oracle test skips" \
    "(TOPOGATE_REQUIRE_GITOPS_ORACLES=1 makes that a failure)" >&2
  exit 3
fi
mkdir -p "$(dirname "$dir")"
tmp="$(mktemp -d "$dir.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
echo "flux: building flux-render ($(go version | cut -d' ' -f3)) into $dir" >&2
CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly go build -trimpath -p 2 -ldflags '-s -w' -o "$tmp/flux-render" .
go version -m "$tmp/flux-render" | awk '$1 == "dep" && $2 ~ /^(github\.com\/fluxcd|sigs\.k8s\.io\/kustomize)/ {print $2" "$3}' > "$tmp/versions.txt"
mv -T "$tmp" "$dir" 2>/dev/null || [ -x "$bin" ]
trap - EXIT
rm -rf "$tmp"
echo "flux: built in $((SECONDS - start)) s" >&2
echo "$bin"
