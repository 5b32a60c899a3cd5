#!/usr/bin/env bash
# Builds kube-apiserver, kube-scheduler and etcd for the cluster tests, once per machine.
#
#   tests/cluster/build.sh          build unless cached; print the binary directory (last line)
#   tests/cluster/build.sh --dir    print the directory the binaries are (or would be) in
#
# The binaries go to ${XDG_CACHE_HOME:-$HOME/.cache}/topogate/cluster/KEY/, where KEY is the
# sha256 of this module's go.mod and go.sum and of the build recipe below (flags and version
# stamps): the same inputs give the same directory, so a second run only hashes three files.
# A build goes to a temporary directory renamed into place at the end, so an interrupted build
# leaves nothing that looks finished. Progress goes to stderr; stdout has only the directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

# The version stamps kubernetes' own build (hack/lib/version.sh) writes into both packages; no
# build date or commit, so the recipe, and with it the key, stays the same on every machine.
kube_version=v1.37.2  # the k8s.io/kubernetes version of go.mod
IFS=. read -r major minor _ <<< "${kube_version#v}"
ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean"
done
# Two packages at a time: the machines have 2 cores and kube-apiserver's link is the peak.
recipe="CGO_ENABLED=0 go build -trimpath -p 2 -ldflags '$ldflags'"

key="$( { cat go.mod go.sum; echo "$recipe"; } | sha256sum | cut -c1-16)"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/topogate/cluster/$key"
bins=(etcd kube-apiserver kube-scheduler)

if [ "${1:-}" = "--dir" ]; then
  echo "$dir"
  exit 0
fi

complete() {
  local b
  for b in "${bins[@]}"; do [ -x "$dir/$b" ] || return 1; done
}

if complete; then
  echo "$dir"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "cluster: no go on PATH: kube-apiserver, kube-scheduler and etcd not built; the cluster tests skip" \
    "(TOPOGATE_REQUIRE_CLUSTER=1 makes that a failure)" >&2
  exit 3
fi

rm -rf "$dir"  # incomplete: a binary was removed by hand
mkdir -p "$(dirname "$dir")"
tmp="$(mktemp -d "$dir.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
echo "cluster: building etcd, kube-apiserver, kube-scheduler ($(go version | cut -d' ' -f3)) into $dir" >&2
build() {  # OUT PACKAGE
  echo "cluster:   $1 <- $2" >&2
  CGO_ENABLED=0 go build -trimpath -p 2 -ldflags "$ldflags" -o "$tmp/$1" "$2"
}
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
for b in "${bins[@]}"; do
  go version -m "$tmp/$b" | awk -v b="$b" '$1 == "mod" || $1 == "dep" && $2 ~ /^(go\.etcd\.io\/etcd\/server|k8s\.io\/kubernetes)/ {print b": "$2" "$3}'
done | sort -u > "$tmp/versions.txt"
# Another build may have finished first; its binaries are as good as ours.
mv -T "$tmp" "$dir" 2>/dev/null || complete
trap - EXIT
rm -rf "$tmp"
echo "cluster: built in $((SECONDS - start)) s" >&2
echo "$dir"
