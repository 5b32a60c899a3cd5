"""PATHs to Kubernetes objects with positions: plain YAML, kustomization trees checked and built
with the real kubectl kustomize, and each built object traced back to where it was written.
"""
