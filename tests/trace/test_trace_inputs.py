"""trace on inputs a reviewer found mishandled: malformed policies, reserved label keys, FQDNs."""

from __future__ import annotations

from pathlib import Path

from conftest import invoke

POD = """
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x, labels: {app: a}}
spec: {containers: [{name: c, image: i}]}
"""

DNS_PROXY = """  - toEndpoints: [{matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}}]
    toPorts: [{ports: [{port: "53", protocol: ANY}], rules: {dns: [{matchPattern: "*"}]}}]
"""


def _trace(tmp: Path, policy: str, *args: str) -> tuple[int, str]:
    (tmp / "pod.yaml").write_text(POD)
    (tmp / "policy.yaml").write_text(policy)
    r = invoke("trace", str(tmp / "pod.yaml"), str(tmp / "policy.yaml"),
               "--from", "x/Pod/a", *args)
    return r.exit_code, r.output


def _egress(rules: str) -> str:
    return ("apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata: {name: p, namespace: x}\n"
            "spec:\n  endpointSelector: {matchLabels: {app: a}}\n  egress:\n" + rules)


def test_fqdn_allow_needs_dns_through_the_proxy(tmp_path: Path) -> None:
    rule = '  - toFQDNs: [{matchName: pypi.org}]\n    toPorts: [{ports: [{port: "443", protocol: TCP}]}]\n'
    code, out = _trace(tmp_path, _egress(rule), "--to", "fqdn:pypi.org", "--port", "443")
    assert code == 1 and "DENIED" in out and "proxy" in out
    code, out = _trace(tmp_path, _egress(rule + DNS_PROXY), "--to", "fqdn:pypi.org", "--port", "443")
    assert code == 0 and "ALLOWED" in out


def test_catch_all_cidr_reaches_a_name(tmp_path: Path) -> None:
    rule = '  - toCIDR: [0.0.0.0/0]\n    toPorts: [{ports: [{port: "443", protocol: TCP}]}]\n'
    code, out = _trace(tmp_path, _egress(rule), "--to", "fqdn:api.example.com", "--port", "443")
    assert code == 0 and "ALLOWED" in out


def test_null_peer_selector_is_bad_input(tmp_path: Path) -> None:
    policy = ("apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata: {name: p, namespace: x}\n"
              "spec:\n  endpointSelector: {}\n  ingressDeny:\n  - fromEndpoints: [null]\n")
    code, out = _trace(tmp_path, policy, "--to", "world", "--port", "80")
    assert code == 2 and "fromEndpoints[0] is not a label selector" in out


def test_policy_types_must_be_a_list(tmp_path: Path) -> None:
    policy = ("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: x}\n"
              "spec:\n  podSelector: {}\n  policyTypes: Ingress\n")
    code, out = _trace(tmp_path, policy, "--to", "world", "--port", "80")
    assert code == 2 and "policyTypes must be a list" in out


def test_reserved_label_keys_are_refused(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(POD)
    r = invoke("trace", str(tmp_path / "pod.yaml"), "--from",
               "x:io.kubernetes.pod.namespace=y,app=a", "--to", "world")
    assert r.exit_code == 2 and "set by Cilium" in r.output
