#!/usr/bin/env bash
# Builds argocd-render (tests/argocd/main.go: Argo CD's own kustomize render) and the kustomize
# CLI it drives, once per machine.
#
#   tests/argocd/build.sh          build unless cached; print argocd-render's path (last line)
#   tests/argocd/build.sh --path   print where it is (or would be)
#
# argo-cd v3.6.2 needs Go 1.27: this script, and only this one, sets GOTOOLCHAIN=go1.27.3, which
# the go command fetches from the module proxy (golang.org/toolchain) when the local Go is
# older. The binaries go to ${XDG_CACHE_HOME:-$HOME/.cache}/topogate/argocd/KEY/, KEY the sha256
# of this module's go.mod, go.sum, main.go and the build recipe; a build goes to a temporary
# directory renamed into place. Exit 3 without Go (the Argo CD oracle test then skips, unless
# TOPOGATE_REQUIRE_GITOPS_ORACLES=1).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
export GOTOOLCHAIN=go1.27.3 GOFLAGS=-mod=readonly CGO_ENABLED=0
recipe="GOTOOLCHAIN=$GOTOOLCHAIN go build -trimpath -p 2 -ldflags '-s -w'; go build -trimpath -p 2 -ldflags '-s -w' sigs.k8s.io/kustomize/kustomize/v5"
key="$( { cat go.mod go.sum main.go; echo "$recipe"; } | sha256sum | cut -c1-16)"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/topogate/argocd/$key"
bin="$dir/argocd-render"

if [ "${1:-}" = "--path" ]; then
  echo "$bin"
  exit 0
fi
if [ -x "$bin" ] && [ -x "$dir/kustomize" ]; then
  echo "$bin"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "argocd: no go on PATH: argocd-render not built; the Argo CD oracle test skips" \
    "(TOPOGATE_REQUIRE_GITOPS_ORACLES=1 makes that a failure)" >&2
  exit 3
fi
mkdir -p "$(dirname "$dir")"
tmp="$(mktemp -d "$dir.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
echo "argocd: building argocd-render and kustomize ($GOTOOLCHAIN) into $dir" >&2
go build -trimpath -p 2 -ldflags '-s -w' -o "$tmp/argocd-render" .
go build -trimpath -p 2 -ldflags '-s -w' -o "$tmp/kustomize" sigs.k8s.io/kustomize/kustomize/v5
go version -m "$tmp/argocd-render" | awk '$1 == "dep" && $2 ~ /^(github\.com\/argoproj|sigs\.k8s\.io\/kustomize)/ {print "argocd-render: "$2" "$3}' > "$tmp/versions.txt"
go version -m "$tmp/kustomize" | awk '($1 == "mod" || $1 == "dep") && $2 ~ /^sigs\.k8s\.io\/kustomize/ {print "kustomize: "$2" "$3}' >> "$tmp/versions.txt"
mv -T "$tmp" "$dir" 2>/dev/null || [ -x "$bin" ]
trap - EXIT
rm -rf "$tmp"
echo "argocd: built in $((SECONDS - start)) s" >&2
echo "$bin"
