// Command argocd-render renders an Application's kustomize source with Argo CD's own code, for
// topogate's Argo CD property test (tests/oracles/test_argocd_oracle.py). Nothing here is imported by
// topogate.
//
// Each line of standard input is one request (JSON); each answer is one line of standard output:
//
//	{"repoRoot": DIR, "path": APPDIR, "kustomize": APPLICATION_SOURCE_KUSTOMIZE, "env": [{"name":..,"value":..}]}
//	{"objects": [OBJECT...]} or {"error": TEXT}
//
// DIR is a scratch copy of the repository and APPDIR the source's directory inside it (Argo CD
// edits the kustomization there, as the repo-server does in its checkout). The render is
// argo-cd v3.6.2's util/kustomize Build, which runs `kustomize edit ...` and `kustomize build`
// with the kustomize binary beside this one (sigs.k8s.io/kustomize/kustomize/v5 v5.8.1, the
// kustomize of kubectl 1.37), as the repo-server runs its bundled kustomize.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/git"
	"github.com/argoproj/argo-cd/v3/util/kustomize"
)

type request struct {
	RepoRoot  string                               `json:"repoRoot"`
	Path      string                               `json:"path"`
	Kustomize *v1alpha1.ApplicationSourceKustomize `json:"kustomize"`
	Env       v1alpha1.Env                         `json:"env"`
}

type answer struct {
	Objects []map[string]any `json:"objects"`
	Error   string           `json:"error,omitempty"`
}

func main() {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin := filepath.Join(filepath.Dir(self), "kustomize")
	// Build asks `kustomize version` of the kustomize on PATH for its edit arguments' format.
	if err := os.Setenv("PATH", filepath.Dir(self)+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		var ans answer
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			ans.Error = "bad request: " + err.Error()
		} else {
			k := kustomize.NewKustomizeApp(req.RepoRoot, req.Path, git.NopCreds{}, "", bin, "", "")
			objs, _, _, err := k.Build(req.Kustomize, nil, &req.Env, nil)
			if err != nil {
				ans.Error = err.Error()
			}
			for _, o := range objs {
				ans.Objects = append(ans.Objects, o.Object)
			}
		}
		if err := enc.Encode(ans); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
