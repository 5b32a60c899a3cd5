#!/usr/bin/env bash
# Builds cilium-oracle (Cilium's own policy engine for the tests), once per machine.
#
#   tests/cilium/build.sh          build unless cached; print the binary's directory (last line)
#   tests/cilium/build.sh --dir    print the directory the binary is (or would be) in
#
# The binary goes to ${XDG_CACHE_HOME:-$HOME/.cache}/topogate/cilium/KEY/, where KEY is the
# sha256 of this module's go.mod, go.sum, Go sources and the build recipe below: the same inputs
# give the same directory, so a second run only hashes a few files. A build goes to a temporary
# directory renamed into place at the end, so an interrupted build leaves nothing that looks
# finished. Progress goes to stderr; stdout has only the directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

# Two packages at a time: the machines have 2 cores.
recipe="CGO_ENABLED=0 go build -trimpath -p 2 -ldflags '-s -w'"

key="$( { cat go.mod go.sum ./*.go; echo "$recipe"; } | sha256sum | cut -c1-16)"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/topogate/cilium/$key"
bin=cilium-oracle

if [ "${1:-}" = "--dir" ]; then
  echo "$dir"
  exit 0
fi

if [ -x "$dir/$bin" ]; then
  echo "$dir"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "cilium: no go on PATH: cilium-oracle not built; the Cilium oracle tests skip" \
    "(TOPOGATE_REQUIRE_CILIUM=1 makes that a failure)" >&2
  exit 3
fi

rm -rf "$dir"  # incomplete: the binary was removed by hand
mkdir -p "$(dirname "$dir")"
tmp="$(mktemp -d "$dir.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
echo "cilium: building cilium-oracle ($(go version | cut -d' ' -f3)) into $dir" >&2
CGO_ENABLED=0 go build -trimpath -p 2 -ldflags '-s -w' -o "$tmp/$bin" .
go version -m "$tmp/$bin" | awk '$1 == "dep" && $2 == "github.com/cilium/cilium" {print "cilium: "$2" "$3}' \
  > "$tmp/versions.txt"
# Another build may have finished first; its binary is as good as ours.
mv -T "$tmp" "$dir" 2>/dev/null || [ -x "$dir/$bin" ]
trap - EXIT
rm -rf "$tmp"
echo "cilium: built in $((SECONDS - start)) s" >&2
echo "$dir"
