"""The inventory held against a real cluster: read nodes, pods, jobs and policies through the
`kubernetes` client (or from `kubectl get -o json` files), then import, drift and `check --live`.

Read-only: every request is a paged `list`; the ClusterRole the commands need is
examples/rbac-topogate-live.yaml.
"""
