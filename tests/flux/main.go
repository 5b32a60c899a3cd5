// Command flux-render renders Flux Kustomizations with Flux's own code, as kustomize-controller
// does between fetching the source and applying, for topogate's property test
// (tests/oracles/test_flux_oracle.py). Nothing here is imported by topogate.
//
// Each line of standard input is one request (JSON); each answer is one line of standard output:
//
//	{"root": DIR, "kustomization": OBJECT, "objects": [CONFIGMAP_OR_SECRET...], "strict": BOOL}
//	{"objects": [OBJECT...]} or {"error": TEXT}
//
// DIR is a scratch copy of the source (the generator writes its kustomization into it). The
// Kustomization goes through kustomize-controller's v1 type first, as the controller reads it.
// Then, as the controller's reconcile does: the path joined with securejoin and required to
// exist, fluxcd/pkg/kustomize's Generator.WriteFile, SecureBuild (remote bases refused),
// SubstituteVariables on each object when spec.postBuild is set (strict as asked, Always from
// substituteStrategy), and fluxcd/pkg/ssa's SetCommonMetadata. ConfigMaps and Secrets are read
// from a controller-runtime fake client holding the request's objects: the API the variables
// come from is the only part of a cluster the render reads, and the fake client serves Get from
// memory the same way.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	securejoin "github.com/cyphar/filepath-securejoin"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	generator "github.com/fluxcd/pkg/kustomize"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

type request struct {
	Root          string           `json:"root"`
	Kustomization json.RawMessage  `json:"kustomization"`
	Objects       []map[string]any `json:"objects"`
	Strict        bool             `json:"strict"`
}

type answer struct {
	Objects []map[string]any `json:"objects"`
	Error   string           `json:"error,omitempty"`
}

func render(req request) ([]map[string]any, error) {
	var obj kustomizev1.Kustomization
	if err := json.Unmarshal(req.Kustomization, &obj); err != nil {
		return nil, fmt.Errorf("decoding the Kustomization: %w", err)
	}
	dirPath, err := securejoin.SecureJoin(req.Root, obj.Spec.Path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dirPath); err != nil {
		return nil, fmt.Errorf("kustomization path not found: %w", err)
	}
	k, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&obj)
	if err != nil {
		return nil, err
	}
	u := unstructured.Unstructured{Object: k}
	if _, err := generator.NewGenerator(req.Root, u).WriteFile(dirPath); err != nil {
		return nil, err
	}
	m, err := generator.SecureBuild(req.Root, dirPath, false)
	if err != nil {
		return nil, fmt.Errorf("kustomize build failed: %w", err)
	}

	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	var held []client.Object
	for _, o := range req.Objects {
		typed, err := scheme.New((&unstructured.Unstructured{Object: o}).GroupVersionKind())
		if err != nil {
			return nil, err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, typed); err != nil {
			return nil, err
		}
		held = append(held, typed.(client.Object))
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(held...).Build()

	for _, res := range m.Resources() {
		if res.GetName() == "" || res.GetKind() == "" || res.GetApiVersion() == "" {
			return nil, fmt.Errorf("failed to decode Kubernetes apiVersion, kind and name from: %v", res.String())
		}
		if obj.Spec.PostBuild != nil {
			always := obj.GetSubstituteStrategy() == kustomizev1.SubstituteStrategyAlways
			outRes, err := generator.SubstituteVariables(context.Background(), c, u, res,
				generator.SubstituteWithStrict(req.Strict), generator.SubstituteWithAlways(always))
			if err != nil {
				return nil, fmt.Errorf("post build failed for '%s/%s': %w", res.GetGvk(), res.GetName(), err)
			}
			if outRes != nil {
				if _, err := m.Replace(res); err != nil {
					return nil, err
				}
			}
		}
	}
	var objects []*unstructured.Unstructured
	for _, res := range m.Resources() {
		data, err := res.MarshalJSON()
		if err != nil {
			return nil, err
		}
		var o unstructured.Unstructured
		if err := o.UnmarshalJSON(data); err != nil {
			return nil, err
		}
		objects = append(objects, &o)
	}
	if cmeta := obj.Spec.CommonMetadata; cmeta != nil {
		ssautil.SetCommonMetadata(objects, cmeta.Labels, cmeta.Annotations)
	}
	out := make([]map[string]any, 0, len(objects))
	for _, o := range objects {
		out = append(out, o.Object)
	}
	return out, nil
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		var ans answer
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			ans.Error = "bad request: " + err.Error()
		} else if objs, err := render(req); err != nil {
			ans.Error = err.Error()
		} else {
			ans.Objects = objs
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
