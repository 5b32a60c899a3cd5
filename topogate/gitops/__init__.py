"""What Argo CD and Flux apply: the Applications and Flux Kustomizations among the inputs rendered
as their engines render them (render), with Flux's generator and post-build (flux, envsubst,
goyaml), Argo CD's repo-server edits (argocd), the engine objects and their sources (engines),
the scratch copy builds run in (scratch), and where findings about the result point (objects)."""
