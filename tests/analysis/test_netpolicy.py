"""Network-policy semantics, one named case per rule of Cilium / Kubernetes NetworkPolicy.

Every case asserts the verdict AND who decided each side, so a case fails if the flow is
allowed for the wrong reason.  Every Cilium object used here is validated against the upstream
CRD schema, so the fixtures are objects Cilium would accept.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

import jsonschema
import pytest
import yaml
from cilium_support import cilium_crd

from topogate.analysis.netpolicy import (
    External,
    PodClass,
    PolicySet,
    SideVerdict,
    SourceRef,
    Verdict,
)

# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


@cache
def crd_validator(kind: str) -> jsonschema.protocols.Validator:
    fname = {
        "CiliumNetworkPolicy": "ciliumnetworkpolicies.yaml",
        "CiliumClusterwideNetworkPolicy": "ciliumclusterwidenetworkpolicies.yaml",
    }[kind]
    path = cilium_crd(fname)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open() as fh:
        crd = yaml.load(fh, Loader=loader)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return jsonschema.Draft7Validator(schema)


def load(text: str) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(text) if d]
    for d in docs:
        if d["kind"] in ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy"):
            errors = sorted(crd_validator(d["kind"]).iter_errors(d), key=str)
            assert not errors, f"{d['kind']}/{d['metadata']['name']} is not a valid Cilium object: {errors[0]}"
    return docs


def pset(text: str) -> PolicySet:
    return PolicySet.from_objects((d, SourceRef("case.yaml", i + 1, 1)) for i, d in enumerate(load(text)))


def pod(ns: str, name: str, *extra: tuple[str, str], ports: tuple[tuple[str, int, str], ...] = (),
        sa: str | None = None) -> PodClass:
    return PodClass(ns, tuple(sorted((("pod", name), *extra))), (("ns", ns),), ports, sa)


def side(s: SideVerdict) -> str:
    """Short name of whatever decided one side: a rule, default deny, or nothing (open)."""
    if s.decided_by is not None:
        r = s.decided_by
        return f"{r.section}[{r.index}] {r.policy}"
    if not s.allowed:
        return "default-deny " + ",".join(str(p) for p in s.enforced_by)
    if "allow-localhost" in s.reason:
        return "localhost"
    return "open"


def summary(v: Verdict) -> str:
    return f"egress={side(v.egress)} ingress={side(v.ingress)}"


XA, XB, XC = pod("x", "a"), pod("x", "b"), pod("x", "c")
YA, YB, YC = pod("y", "a"), pod("y", "b"), pod("y", "c")
ZA, ZB, ZC = pod("z", "a"), pod("z", "b"), pod("z", "c")
WORLD = External(entity="world")
OPEN = "egress=open ingress=open"

# ---------------------------------------------------------------------------------------------
# policy texts shared by several cases
# ---------------------------------------------------------------------------------------------

CNP_B_FROM_A_80 = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: b-from-a, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {pod: a}}]
    toPorts: [{ports: [{port: "80", protocol: TCP}]}]
"""

CNP_B_FROM_A_ALL = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: b-from-a, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {pod: a}}]
"""

CCNP_DENY_A_80 = """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: deny-a-80}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingressDeny:
  - fromEndpoints: [{matchLabels: {pod: a}}]
    toPorts: [{ports: [{port: "80", protocol: TCP}]}]
"""

CNP_B_L4_ONLY_80 = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: l4-only, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - toPorts: [{ports: [{port: "80", protocol: TCP}]}]
"""

CNP_A_EGRESS_PORTS = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: a-egress, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: a}}
  egress:
  - toEndpoints: [{}]
    toPorts:
    - ports: [{port: "29500", endPort: 29510, protocol: TCP}]
  - toEndpoints: [{}]
    toPorts:
    - ports: [{port: "53", protocol: UDP}]
  - toEndpoints: [{}]
    toPorts:
    - ports: [{port: "8125", protocol: ANY}]
  - toEndpoints: [{}]
    toPorts:
    - ports: [{port: "9000"}]
  - toEndpoints: [{}]
    toPorts:
    - ports: [{port: metrics, protocol: TCP}]
"""

CCNP_ENTITIES = """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: b-entities}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEntities: [cluster]
    toPorts: [{ports: [{port: "80", protocol: TCP}]}]
  - fromEntities: [world]
    toPorts: [{ports: [{port: "443", protocol: TCP}]}]
  - fromEntities: [all]
    toPorts: [{ports: [{port: "8443", protocol: TCP}]}]
"""

CNP_A_EGRESS_EXTERNAL = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: a-out, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: a}}
  egress:
  - toEntities: [kube-apiserver]
    toPorts: [{ports: [{port: "443", protocol: TCP}]}]
  - toCIDRSet:
    - {cidr: 10.0.0.0/8, except: [10.96.0.0/12]}
  - toCIDR: [0.0.0.0/0]
    toPorts: [{ports: [{port: "8080", protocol: TCP}]}]
  - toFQDNs: [{matchPattern: "*.s3.amazonaws.com"}, {matchName: pypi.org}]
    toPorts: [{ports: [{port: "443", protocol: TCP}]}]
  - toEndpoints: [{matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}}]
    toPorts: [{ports: [{port: "53", protocol: ANY}], rules: {dns: [{matchPattern: "*"}]}}]
"""

# The same toFQDNs rule without a DNS rule that goes through Cilium's proxy: Cilium never learns
# the addresses behind the name, so the allow never matches a packet.
CNP_A_FQDN_NO_PROXY = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: a-fqdn, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: a}}
  egress:
  - toFQDNs: [{matchName: pypi.org}]
    toPorts: [{ports: [{port: "443", protocol: TCP}]}]
  - toEndpoints: [{matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}}]
    toPorts: [{ports: [{port: "53", protocol: UDP}]}]
"""

NP_X_B_FROM_Y_A = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b-from-y-a, namespace: x}
spec:
  podSelector: {matchLabels: {pod: b}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {ns: y}}
      podSelector: {matchLabels: {pod: a}}
"""

NP_X_B_FROM_Y_OR_A = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b-from-y-or-a, namespace: x}
spec:
  podSelector: {matchLabels: {pod: b}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {ns: y}}
    - podSelector: {matchLabels: {pod: a}}
"""

NP_X_B_IPBLOCK = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b-ipblock, namespace: x}
spec:
  podSelector: {matchLabels: {pod: b}}
  ingress:
  - from:
    - ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}
"""

NP_X_B_NAMED = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b-named, namespace: x}
spec:
  podSelector: {matchLabels: {pod: b}}
  policyTypes: [Ingress]
  ingress:
  - ports: [{port: http}, {port: dns}]
"""

XB_NAMED = pod("x", "b", ports=(("http", 8080, "TCP"), ("dns", 5353, "UDP")))

NP_EGRESS_ONLY = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress-only, namespace: x}
spec:
  podSelector: {matchLabels: {pod: b}}
  policyTypes: [Egress]
  egress: []
"""

# ---------------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    policies: str
    src: PodClass | External
    dst: PodClass | External
    port: int
    proto: str
    allowed: bool
    decided: str  # summary(verdict): who decided each side


CASES: list[Case] = [
    Case("no-policy-allows-everything", "", XA, XB, 80, "TCP", True, OPEN),
    Case("default-deny-only-once-selected", CNP_B_FROM_A_80, XC, XA, 80, "TCP", True, OPEN),
    Case("selected-pod-is-default-deny", CNP_B_FROM_A_80, XC, XB, 80, "TCP", False,
         "egress=open ingress=default-deny CiliumNetworkPolicy/x/b-from-a"),
    Case("l3-l4-rule-allows-its-port", CNP_B_FROM_A_80, XA, XB, 80, "TCP", True,
         "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/b-from-a"),
    Case("l3-l4-rule-other-port-denied", CNP_B_FROM_A_80, XA, XB, 81, "TCP", False,
         "egress=open ingress=default-deny CiliumNetworkPolicy/x/b-from-a"),
    Case("l3-rule-without-toports-allows-all-ports", CNP_B_FROM_A_ALL, XA, XB, 40000, "UDP", True,
         "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/b-from-a"),
    Case("both-sides-must-allow", CNP_B_FROM_A_80 + """
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: c-egress-dns-only, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: a}}
  egress:
  - toEndpoints: [{matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s-app: kube-dns}}]
    toPorts: [{ports: [{port: "53", protocol: ANY}]}]
""", XA, XB, 80, "TCP", False, "egress=default-deny CiliumNetworkPolicy/x/c-egress-dns-only ingress=ingress[0] "
     "CiliumNetworkPolicy/x/b-from-a"),
    Case("both-sides-allow", CNP_B_FROM_A_80 + """
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: a-to-b, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: a}}
  egress:
  - toEndpoints: [{matchLabels: {pod: b}}]
""", XA, XB, 80, "TCP", True,
         "egress=egress[0] CiliumNetworkPolicy/x/a-to-b ingress=ingress[0] CiliumNetworkPolicy/x/b-from-a"),
    Case("deny-beats-allow", CNP_B_FROM_A_ALL + "---" + CCNP_DENY_A_80, XA, XB, 80, "TCP", False,
         "egress=open ingress=ingressDeny[0] CiliumClusterwideNetworkPolicy/deny-a-80"),
    Case("deny-only-covers-its-ports", CNP_B_FROM_A_ALL + "---" + CCNP_DENY_A_80, XA, XB, 81, "TCP", True,
         "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/b-from-a"),
    Case("deny-policy-alone-turns-on-default-deny", CCNP_DENY_A_80, XC, XB, 81, "TCP", False,
         "egress=open ingress=default-deny CiliumClusterwideNetworkPolicy/deny-a-80"),
    Case("deny-applies-without-default-deny", """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: deny-a}
spec:
  endpointSelector: {}
  enableDefaultDeny: {ingress: false}
  ingressDeny:
  - fromEndpoints: [{matchLabels: {pod: a}}]
""", YA, ZB, 80, "TCP", False, "egress=open ingress=ingressDeny[0] CiliumClusterwideNetworkPolicy/deny-a"),
    Case("egress-deny-beats-clusterwide-allow", """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: allow-all-egress}
spec:
  endpointSelector: {}
  egress:
  - toEntities: [all]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: no-b, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: a}}
  egressDeny:
  - toEndpoints: [{matchLabels: {pod: b}}]
""", XA, XB, 80, "TCP", False, "egress=egressDeny[0] CiliumNetworkPolicy/x/no-b ingress=open"),
    Case("enable-default-deny-false", """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: dns-visibility}
spec:
  endpointSelector: {}
  enableDefaultDeny: {egress: false, ingress: false}
  egress:
  - toEndpoints: [{matchLabels: {io.kubernetes.pod.namespace: kube-system, k8s-app: kube-dns}}]
    toPorts:
    - ports: [{port: "53", protocol: UDP}]
      rules: {dns: [{matchPattern: "*"}]}
""", XA, XB, 80, "TCP", True, OPEN),
    Case("enable-default-deny-any-policy-turns-it-on", """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: dns-visibility}
spec:
  endpointSelector: {}
  enableDefaultDeny: {egress: false}
  egress:
  - toEndpoints: [{matchLabels: {io.kubernetes.pod.namespace: kube-system, k8s-app: kube-dns}}]
    toPorts: [{ports: [{port: "53", protocol: UDP}]}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: a-egress, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: a}}
  egress:
  - toEndpoints: [{matchLabels: {pod: c}}]
""", XA, XB, 80, "TCP", False, "egress=default-deny CiliumNetworkPolicy/x/a-egress ingress=open"),
    Case("cilium-empty-rule-allows-nothing", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: deny-all-ingress, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - {}
""", XA, XB, 80, "TCP", False, "egress=open ingress=default-deny CiliumNetworkPolicy/x/deny-all-ingress"),
    Case("cilium-empty-list-is-no-rules", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: empty-ingress, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress: []
  egress:
  - toEntities: [cluster]
""", XA, XB, 80, "TCP", True, OPEN),
    Case("cilium-explicit-empty-selector-list-selects-nobody", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: nobody, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: []
    toPorts: [{ports: [{port: "80", protocol: TCP}]}]
""", XA, XB, 80, "TCP", False, "egress=open ingress=default-deny CiliumNetworkPolicy/x/nobody"),
    Case("l4-only-rule-allows-any-pod", CNP_B_L4_ONLY_80, ZC, XB, 80, "TCP", True,
         "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/l4-only"),
    Case("l4-only-rule-allows-world", CNP_B_L4_ONLY_80, WORLD, XB, 80, "TCP", True,
         "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/l4-only"),
    Case("l4-only-rule-other-port-denied", CNP_B_L4_ONLY_80, XA, XB, 81, "TCP", False,
         "egress=open ingress=default-deny CiliumNetworkPolicy/x/l4-only"),
    Case("cnp-peer-scoped-to-namespace", CNP_B_FROM_A_80, YA, XB, 80, "TCP", False,
         "egress=open ingress=default-deny CiliumNetworkPolicy/x/b-from-a"),
    Case("cnp-empty-peer-selector-is-own-namespace", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: same-ns, namespace: x}
spec:
  endpointSelector: {}
  ingress:
  - fromEndpoints: [{}]
""", YA, XB, 80, "TCP", False, "egress=open ingress=default-deny CiliumNetworkPolicy/x/same-ns"),
    Case("cnp-peer-with-namespace-label-crosses", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: from-y, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {k8s:io.kubernetes.pod.namespace: y, pod: a}}]
""", YA, XB, 80, "TCP", True, "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/from-y"),
    Case("cnp-peer-namespace-in-match-expressions-crosses", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: from-yz, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints:
    - matchExpressions:
      - {key: io.kubernetes.pod.namespace, operator: In, values: [y, z]}
""", ZC, XB, 80, "TCP", True, "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/from-yz"),
    Case("cnp-peer-namespace-labels-key-crosses", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: from-team-ml, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {io.cilium.k8s.namespace.labels.team: ml}}]
---
apiVersion: v1
kind: Namespace
metadata: {name: z, labels: {team: ml}}
""", ZA, XB, 80, "TCP", True, "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/from-team-ml"),
    Case("cnp-endpoint-selector-cannot-leave-namespace", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: tries-y, namespace: x}
spec:
  endpointSelector: {matchLabels: {k8s:io.kubernetes.pod.namespace: y}}
  ingress:
  - {}
""", XA, YB, 80, "TCP", True, OPEN),
    Case("cnp-without-namespace-lives-in-default", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: no-ns}
spec:
  endpointSelector: {}
  ingress:
  - {}
""", XA, pod("default", "b"), 80, "TCP", False, "egress=open ingress=default-deny CiliumNetworkPolicy/default/no-ns"),
    Case("ccnp-not-namespace-scoped-peer", """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: b-from-a}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {pod: a}}]
""", YA, XB, 80, "TCP", True, "egress=open ingress=ingress[0] CiliumClusterwideNetworkPolicy/b-from-a"),
    Case("ccnp-not-namespace-scoped-subject", """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: b-from-a}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {pod: a}}]
""", XC, ZB, 80, "TCP", False, "egress=open ingress=default-deny CiliumClusterwideNetworkPolicy/b-from-a"),
    Case("k8s-prefix-stripped", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: prefixed, namespace: x}
spec:
  endpointSelector: {matchLabels: {k8s:pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {k8s:pod: a}}]
""", XA, XB, 80, "TCP", True, "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/prefixed"),
    Case("any-prefix-matches-k8s-label", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: prefixed, namespace: x}
spec:
  endpointSelector: {matchLabels: {any:pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {any:pod: a}}]
""", XA, XB, 80, "TCP", True, "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/prefixed"),
    Case("reserved-prefix-never-matches-a-pod", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: reserved, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {reserved:pod: a}}]
""", XA, XB, 80, "TCP", False, "egress=open ingress=default-deny CiliumNetworkPolicy/x/reserved"),
    Case("serviceaccount-label", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: by-sa, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {io.cilium.k8s.policy.serviceaccount: trainer}}]
""", pod("x", "a", sa="trainer"), XB, 80, "TCP", True, "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/by-sa"),
    Case("match-expressions-notin-selects-pod-without-key", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: notin, namespace: x}
spec:
  endpointSelector:
    matchExpressions: [{key: tier, operator: NotIn, values: [frontend]}]
  ingress:
  - {}
""", XA, XB, 80, "TCP", False, "egress=open ingress=default-deny CiliumNetworkPolicy/x/notin"),
    Case("match-expressions-exists-needs-key", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: exists, namespace: x}
spec:
  endpointSelector:
    matchExpressions: [{key: tier, operator: Exists}]
  ingress:
  - {}
""", XA, XB, 80, "TCP", True, OPEN),
    Case("match-expressions-doesnotexist", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: untiered, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints:
    - matchExpressions: [{key: tier, operator: DoesNotExist}]
""", pod("x", "a", ("tier", "web")), XB, 80, "TCP", False,
         "egress=open ingress=default-deny CiliumNetworkPolicy/x/untiered"),
    Case("entity-cluster-includes-pods-of-any-namespace", CCNP_ENTITIES, ZC, XB, 80, "TCP", True,
         "egress=open ingress=ingress[0] CiliumClusterwideNetworkPolicy/b-entities"),
    Case("entity-cluster-includes-remote-node", CCNP_ENTITIES, External(entity="remote-node"), XB, 80, "TCP", True,
         "egress=open ingress=ingress[0] CiliumClusterwideNetworkPolicy/b-entities"),
    Case("entity-cluster-excludes-world", CCNP_ENTITIES, WORLD, XB, 80, "TCP", False,
         "egress=open ingress=default-deny CiliumClusterwideNetworkPolicy/b-entities"),
    Case("entity-world-excludes-pods", CCNP_ENTITIES, XA, XB, 443, "TCP", False,
         "egress=open ingress=default-deny CiliumClusterwideNetworkPolicy/b-entities"),
    Case("entity-world-covers-external-ip", CCNP_ENTITIES, External(cidr="203.0.113.7"), XB, 443, "TCP", True,
         "egress=open ingress=ingress[1] CiliumClusterwideNetworkPolicy/b-entities"),
    Case("entity-all-covers-pods", CCNP_ENTITIES, YA, XB, 8443, "TCP", True,
         "egress=open ingress=ingress[2] CiliumClusterwideNetworkPolicy/b-entities"),
    Case("host-always-reaches-local-pods", CCNP_ENTITIES, External(entity="host"), XB, 9999, "TCP", True,
         "egress=open ingress=localhost"),
    Case("egress-to-kube-apiserver-entity", CNP_A_EGRESS_EXTERNAL, XA, External(entity="kube-apiserver"), 443,
         "TCP", True, "egress=egress[0] CiliumNetworkPolicy/x/a-out ingress=open"),
    Case("cidrset-allows-inside", CNP_A_EGRESS_EXTERNAL, XA, External(cidr="10.1.2.3"), 5432, "TCP", True,
         "egress=egress[1] CiliumNetworkPolicy/x/a-out ingress=open"),
    Case("cidrset-except-carves-out", CNP_A_EGRESS_EXTERNAL, XA, External(cidr="10.96.0.10"), 5432, "TCP", False,
         "egress=default-deny CiliumNetworkPolicy/x/a-out ingress=open"),
    Case("cidr-never-matches-pods", CNP_A_EGRESS_EXTERNAL, XA, XB, 8080, "TCP", False,
         "egress=default-deny CiliumNetworkPolicy/x/a-out ingress=open"),
    Case("cidr-0-0-0-0-is-world", CNP_A_EGRESS_EXTERNAL, XA, WORLD, 8080, "TCP", True,
         "egress=egress[2] CiliumNetworkPolicy/x/a-out ingress=open"),
    Case("fqdn-pattern-one-level", CNP_A_EGRESS_EXTERNAL, XA, External(fqdn="ckpt.s3.amazonaws.com"), 443, "TCP",
         True, "egress=egress[3] CiliumNetworkPolicy/x/a-out ingress=open"),
    Case("fqdn-needs-dns-proxy", CNP_A_FQDN_NO_PROXY, XA, External(fqdn="pypi.org"), 443, "TCP",
         False, "egress=egress[0] CiliumNetworkPolicy/x/a-fqdn ingress=open"),
    Case("cidr-catch-all-matches-fqdn", CNP_A_EGRESS_EXTERNAL, XA, External(fqdn="api.example.com"),
         8080, "TCP", True, "egress=egress[2] CiliumNetworkPolicy/x/a-out ingress=open"),
    Case("fqdn-pattern-not-two-levels", CNP_A_EGRESS_EXTERNAL, XA, External(fqdn="a.b.s3.amazonaws.com"), 443,
         "TCP", False, "egress=default-deny CiliumNetworkPolicy/x/a-out ingress=open"),
    Case("endport-range-inclusive", CNP_A_EGRESS_PORTS, XA, XB, 29510, "TCP", True,
         "egress=egress[0] CiliumNetworkPolicy/x/a-egress ingress=open"),
    Case("endport-range-ends", CNP_A_EGRESS_PORTS, XA, XB, 29511, "TCP", False,
         "egress=default-deny CiliumNetworkPolicy/x/a-egress ingress=open"),
    Case("udp-not-tcp", CNP_A_EGRESS_PORTS, XA, XB, 53, "TCP", False,
         "egress=default-deny CiliumNetworkPolicy/x/a-egress ingress=open"),
    Case("udp-port-allows-udp", CNP_A_EGRESS_PORTS, XA, XB, 53, "UDP", True,
         "egress=egress[1] CiliumNetworkPolicy/x/a-egress ingress=open"),
    Case("protocol-any", CNP_A_EGRESS_PORTS, XA, XB, 8125, "UDP", True,
         "egress=egress[2] CiliumNetworkPolicy/x/a-egress ingress=open"),
    Case("protocol-missing-means-any", CNP_A_EGRESS_PORTS, XA, XB, 9000, "SCTP", True,
         "egress=egress[3] CiliumNetworkPolicy/x/a-egress ingress=open"),
    Case("cnp-named-port-resolved-on-destination", CNP_A_EGRESS_PORTS, XA,
         pod("x", "b", ports=(("metrics", 9090, "TCP"),)), 9090, "TCP", True,
         "egress=egress[4] CiliumNetworkPolicy/x/a-egress ingress=open"),
    Case("cnp-named-port-absent-on-destination", CNP_A_EGRESS_PORTS, XA, XB, 9090, "TCP", False,
         "egress=default-deny CiliumNetworkPolicy/x/a-egress ingress=open"),
    Case("union-across-policies", CNP_B_FROM_A_80 + """
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: b-81, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: [{}]
    toPorts: [{ports: [{port: "81", protocol: TCP}]}]
""", XA, XB, 81, "TCP", True, "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/b-81"),
    Case("union-across-kinds", CNP_B_FROM_A_80 + """
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-81, namespace: x}
spec:
  podSelector: {matchLabels: {pod: b}}
  ingress:
  - ports: [{port: 81}]
""", XC, XB, 81, "TCP", True, "egress=open ingress=ingress[0] NetworkPolicy/x/np-81"),
    Case("cnp-specs-list-each-rule-applies", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: multi, namespace: x}
specs:
- endpointSelector: {matchLabels: {pod: c}}
  ingress: [{fromEndpoints: [{matchLabels: {pod: a}}]}]
- endpointSelector: {matchLabels: {pod: b}}
  ingress: [{fromEndpoints: [{matchLabels: {pod: c}}]}]
""", XC, XB, 80, "TCP", True, "egress=open ingress=ingress[0] CiliumNetworkPolicy/x/multi"),
    # -- Kubernetes NetworkPolicy as Cilium enforces it -----------------------------------------
    Case("np-default-policytypes-isolate-ingress", """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-ingress, namespace: x}
spec:
  podSelector: {}
""", XA, XB, 80, "TCP", False, "egress=open ingress=default-deny NetworkPolicy/x/deny-ingress"),
    Case("np-egress-only-does-not-isolate-ingress", NP_EGRESS_ONLY, XA, XB, 80, "TCP", True, OPEN),
    Case("np-egress-only-isolates-egress", NP_EGRESS_ONLY, XB, XA, 80, "TCP", False,
         "egress=default-deny NetworkPolicy/x/egress-only ingress=open"),
    Case("np-egress-rules-imply-egress-type", """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b-egress, namespace: x}
spec:
  podSelector: {matchLabels: {pod: b}}
  egress:
  - to: [{podSelector: {matchLabels: {pod: c}}}]
""", XB, XA, 80, "TCP", False, "egress=default-deny NetworkPolicy/x/b-egress ingress=open"),
    # The Kubernetes API ignores rules of a direction policyTypes does not list; Cilium applies
    # them and isolates that direction (pkg/k8s ParseNetworkPolicy; cilium/cilium#48703).
    Case("np-ingress-rules-applied-when-type-not-listed", """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress-type, namespace: x}
spec:
  podSelector: {matchLabels: {pod: b}}
  policyTypes: [Egress]
  ingress:
  - from: [{podSelector: {matchLabels: {pod: a}}}]
""", XC, XB, 80, "TCP", False, "egress=open ingress=default-deny NetworkPolicy/x/egress-type"),
    Case("np-ingress-rules-allow-when-type-not-listed", """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress-type, namespace: x}
spec:
  podSelector: {matchLabels: {pod: b}}
  policyTypes: [Egress]
  ingress:
  - from: [{podSelector: {matchLabels: {pod: a}}}]
""", XA, XB, 80, "TCP", True, "egress=open ingress=ingress[0] NetworkPolicy/x/egress-type"),
    Case("np-pod-and-namespace-selector-and", NP_X_B_FROM_Y_A, YA, XB, 80, "TCP", True,
         "egress=open ingress=ingress[0] NetworkPolicy/x/b-from-y-a"),
    Case("np-pod-and-namespace-selector-and-wrong-pod", NP_X_B_FROM_Y_A, YB, XB, 80, "TCP", False,
         "egress=open ingress=default-deny NetworkPolicy/x/b-from-y-a"),
    Case("np-pod-and-namespace-selector-and-wrong-namespace", NP_X_B_FROM_Y_A, XA, XB, 80, "TCP", False,
         "egress=open ingress=default-deny NetworkPolicy/x/b-from-y-a"),
    Case("np-separate-peers-are-or", NP_X_B_FROM_Y_OR_A, YC, XB, 80, "TCP", True,
         "egress=open ingress=ingress[0] NetworkPolicy/x/b-from-y-or-a"),
    Case("np-podselector-alone-is-own-namespace", NP_X_B_FROM_Y_OR_A, ZA, XB, 80, "TCP", False,
         "egress=open ingress=default-deny NetworkPolicy/x/b-from-y-or-a"),
    Case("np-namespace-selector-metadata-name-implied", """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: from-z, namespace: x}
spec:
  podSelector: {}
  ingress:
  - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: z}}}]
""", ZB, XB, 80, "TCP", True, "egress=open ingress=ingress[0] NetworkPolicy/x/from-z"),
    Case("np-empty-namespace-selector-is-all-namespaces", """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: all-ns, namespace: x}
spec:
  podSelector: {}
  ingress:
  - from: [{namespaceSelector: {}}]
""", ZB, XB, 80, "TCP", True, "egress=open ingress=ingress[0] NetworkPolicy/x/all-ns"),
    Case("np-ipblock-except", NP_X_B_IPBLOCK, External(cidr="10.1.3.4"), XB, 80, "TCP", False,
         "egress=open ingress=default-deny NetworkPolicy/x/b-ipblock"),
    Case("np-ipblock-inside", NP_X_B_IPBLOCK, External(cidr="10.2.3.4/32"), XB, 80, "TCP", True,
         "egress=open ingress=ingress[0] NetworkPolicy/x/b-ipblock"),
    Case("np-ipblock-does-not-match-pods", NP_X_B_IPBLOCK, XA, XB, 80, "TCP", False,
         "egress=open ingress=default-deny NetworkPolicy/x/b-ipblock"),
    Case("np-named-port", NP_X_B_NAMED, XA, XB_NAMED, 8080, "TCP", True,
         "egress=open ingress=ingress[0] NetworkPolicy/x/b-named"),
    Case("np-named-port-number-not-listed", NP_X_B_NAMED, XA, XB_NAMED, 80, "TCP", False,
         "egress=open ingress=default-deny NetworkPolicy/x/b-named"),
    Case("np-named-port-protocol-must-match", NP_X_B_NAMED, XA, XB_NAMED, 5353, "UDP", False,
         "egress=open ingress=default-deny NetworkPolicy/x/b-named"),
    Case("np-port-protocol-defaults-to-tcp", """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p80, namespace: x}
spec:
  podSelector: {}
  ingress:
  - ports: [{port: 80}]
""", XA, XB, 80, "UDP", False, "egress=open ingress=default-deny NetworkPolicy/x/p80"),
    Case("np-endport", """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: range, namespace: x}
spec:
  podSelector: {}
  ingress:
  - ports: [{port: 32000, endPort: 32768, protocol: TCP}]
""", XA, XB, 32768, "TCP", True, "egress=open ingress=ingress[0] NetworkPolicy/x/range"),
    Case("np-empty-ingress-rule-allows-all", """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-all, namespace: x}
spec:
  podSelector: {}
  ingress:
  - {}
""", WORLD, XB, 12345, "UDP", True, "egress=open ingress=ingress[0] NetworkPolicy/x/allow-all"),
    Case("np-empty-ingress-list-denies-all", """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: x}
spec:
  podSelector: {}
  policyTypes: [Ingress]
  ingress: []
""", XA, XB, 80, "TCP", False, "egress=open ingress=default-deny NetworkPolicy/x/deny-all"),
    Case("np-deny-by-cilium-beats-np-allow", """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-all, namespace: x}
spec:
  podSelector: {}
  ingress:
  - {}
""" + "---" + CCNP_DENY_A_80, XA, XB, 80, "TCP", False,
         "egress=open ingress=ingressDeny[0] CiliumClusterwideNetworkPolicy/deny-a-80"),
    # -- the flows a training job needs ---------------------------------------------------------
    Case("dns-to-kube-dns-allowed", """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: job, namespace: ml}
spec:
  endpointSelector: {matchLabels: {training.kubeflow.org/job-name: llama}}
  egress:
  - toEndpoints: [{matchLabels: {training.kubeflow.org/job-name: llama}}]
  - toEndpoints: [{matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}}]
    toPorts: [{ports: [{port: "53", protocol: UDP}, {port: "53", protocol: TCP}]}]
""", PodClass("ml", (("training.kubeflow.org/job-name", "llama"),)),
         PodClass("kube-system", (("k8s-app", "kube-dns"),)), 53, "UDP", True,
         "egress=egress[1] CiliumNetworkPolicy/ml/job ingress=open"),
]


def test_case_names_are_unique_and_enough() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert len(CASES) >= 45


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_semantics(case: Case) -> None:
    ps = pset(case.policies)
    v = ps.evaluate(case.src, case.dst, case.port, case.proto)
    assert (v.allowed, summary(v)) == (case.allowed, case.decided), v.reason


# ---------------------------------------------------------------------------------------------
# conformance-style matrices: pods a,b,c in namespaces x,y,z on ports 80/81
# ---------------------------------------------------------------------------------------------

PODS = [pod(ns, n) for ns in "xyz" for n in "abc"]


def matrix(ps: PolicySet, port: int, proto: str = "TCP") -> list[str]:
    """One row per source; '.' allowed, 'X' denied, columns in PODS order."""
    return ["".join("." if ps.evaluate(s, d, port, proto).allowed else "X" for d in PODS) for s in PODS]


def test_matrix_np_allow_from_namespace_y_to_xa_on_80() -> None:
    ps = pset("""
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-ns-y, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress:
  - from: [{namespaceSelector: {matchLabels: {ns: y}}}]
    ports: [{port: 80, protocol: TCP}]
""")
    #          xa xb xc ya yb yc za zb zc
    row_x = "X" + "." * 8
    row_y = "." * 9
    assert matrix(ps, 80) == [row_x] * 3 + [row_y] * 3 + [row_x] * 3
    assert matrix(ps, 81) == [row_x] * 9


def test_matrix_cnp_namespace_isolation_with_egress() -> None:
    # Cilium's "enforce namespace boundaries" pattern, at ingress and egress, for x only.
    ps = pset("""
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: isolate, namespace: x}
spec:
  endpointSelector: {}
  ingress:
  - fromEndpoints: [{}]
  egress:
  - toEndpoints: [{}]
""")
    rows = matrix(ps, 80)
    inside, outside = "...XXXXXX", "XXX......"
    assert rows == [inside] * 3 + [outside] * 6


def test_matrix_ccnp_deny_from_z_with_np_allow_all() -> None:
    ps = pset("""
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-all, namespace: y}
spec:
  podSelector: {}
  policyTypes: [Ingress, Egress]
  ingress: [{}]
  egress: [{}]
---
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: no-z-on-81}
spec:
  endpointSelector: {}
  enableDefaultDeny: {ingress: false, egress: false}
  ingressDeny:
  - fromEndpoints: [{matchLabels: {k8s:io.kubernetes.pod.namespace: z}}]
    toPorts: [{ports: [{port: "81", protocol: TCP}]}]
""")
    assert matrix(ps, 80) == ["." * 9] * 9
    # on 81 nothing from z gets anywhere; everything else is open
    assert matrix(ps, 81) == ["." * 9] * 6 + ["X" * 9] * 3


# ---------------------------------------------------------------------------------------------
# port classes
# ---------------------------------------------------------------------------------------------


def test_port_classes_split_where_rules_split() -> None:
    ps = pset(CNP_A_EGRESS_PORTS + "---" + """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: no-29505}
spec:
  endpointSelector: {}
  egressDeny:
  - toEndpoints: [{}]
    toPorts: [{ports: [{port: "29505", protocol: TCP}]}]
""")
    classes = ps.port_classes(XA, XB)
    got = [(str(r), r.verdict.allowed) for r in classes]
    assert got == [
        ("1-8124/TCP", False),
        ("8125/TCP", True),
        ("8126-8999/TCP", False),
        ("9000/TCP", True),
        ("9001-29499/TCP", False),
        ("29500-29504/TCP", True),
        ("29505/TCP", False),
        ("29506-29510/TCP", True),
        ("29511-65535/TCP", False),
        ("1-52/UDP", False),
        ("53/UDP", True),
        ("54-8124/UDP", False),
        ("8125/UDP", True),
        ("8126-8999/UDP", False),
        ("9000/UDP", True),
        ("9001-65535/UDP", False),
    ]
    deny = next(r for r in classes if str(r) == "29505/TCP")
    assert deny.verdict.decided_by is not None
    assert str(deny.verdict.decided_by.policy) == "CiliumClusterwideNetworkPolicy/no-29505"


def test_port_classes_cover_every_port_once() -> None:
    ps = pset(CNP_A_EGRESS_PORTS)
    dst = pod("x", "b", ports=(("metrics", 9090, "TCP"),))
    for proto in ("TCP", "UDP"):
        ranges = [r for r in ps.port_classes(XA, dst) if r.protocol == proto]
        assert ranges[0].start == 1 and ranges[-1].end == 65535
        assert all(a.end + 1 == b.start for a, b in itertools.pairwise(ranges))
        # neighbours differ, otherwise they would have been merged
        assert all(a.verdict != b.verdict for a, b in itertools.pairwise(ranges))
    assert any(str(r) == "9090/TCP" and r.verdict.allowed for r in ps.port_classes(XA, dst))


def test_port_classes_without_policy_is_one_class_per_protocol() -> None:
    ps = pset("")
    assert [str(r) for r in ps.port_classes(XA, XB)] == ["1-65535/TCP", "1-65535/UDP"]


# ---------------------------------------------------------------------------------------------
# reason strings, refs, hooks
# ---------------------------------------------------------------------------------------------


def test_reason_deny_names_rule_policy_and_position() -> None:
    ps = pset(CNP_B_FROM_A_ALL + "---" + CCNP_DENY_A_80)
    v = ps.evaluate(XA, XB, 80, "TCP")
    assert v.ingress.reason == "denied by ingressDeny rule 0 of CiliumClusterwideNetworkPolicy/deny-a-80 (case.yaml:2:1)"
    assert v.reason == "ingress: " + v.ingress.reason


def test_reason_default_deny_lists_policies() -> None:
    ps = pset(CNP_B_FROM_A_80 + "---" + CNP_B_L4_ONLY_80)
    v = ps.evaluate(XC, XB, 81, "TCP")
    assert v.ingress.reason == (
        "default deny: no rule of CiliumNetworkPolicy/x/b-from-a, CiliumNetworkPolicy/x/l4-only allows it"
    )
    assert v.ingress.enforced and v.ingress.decided_by is None
    assert [str(p) for p in v.ingress.selected_by] == ["CiliumNetworkPolicy/x/b-from-a", "CiliumNetworkPolicy/x/l4-only"]


def test_reason_allow_and_open_sides() -> None:
    ps = pset(CNP_B_FROM_A_80)
    v = ps.evaluate(XA, XB, 80, "TCP")
    assert v.ingress.reason == "allowed by ingress rule 0 of CiliumNetworkPolicy/x/b-from-a (case.yaml:1:1)"
    assert v.egress.reason == "not enforced: no policy selects x/{pod=a}, so egress is allowed"
    assert not v.egress.enforced and v.egress.selected_by == ()


def test_reason_enable_default_deny_false_is_explained() -> None:
    ps = pset("""
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: soft, namespace: x}
spec:
  endpointSelector: {}
  enableDefaultDeny: {ingress: false}
  ingress: [{fromEndpoints: [{matchLabels: {pod: a}}]}]
""")
    v = ps.evaluate(XC, XB, 80, "TCP")
    assert v.allowed
    assert v.ingress.reason == (
        "not enforced: CiliumNetworkPolicy/x/soft set enableDefaultDeny.ingress: false, so ingress is allowed"
    )


def test_reason_external_side() -> None:
    v = pset("").evaluate(WORLD, XB, 80, "TCP")
    assert v.egress.reason == "sender world is not a Cilium endpoint; no egress policy applies"


def test_rule_source_from_position_map() -> None:
    (obj,) = load(CNP_B_FROM_A_80)
    obj_ref = SourceRef("p.yaml", 10, 1)
    rule_ref = SourceRef("p.yaml", 16, 5)
    ps = PolicySet.from_objects([(obj, obj_ref, {("spec", "ingress", 0): rule_ref})])
    v = ps.evaluate(XA, XB, 80, "TCP")
    assert v.ingress.decided_by is not None
    assert v.ingress.decided_by.source == rule_ref
    assert v.ingress.decided_by.policy.source == obj_ref


def test_ignores_other_objects_and_learns_namespace_labels() -> None:
    ps = pset("""
apiVersion: v1
kind: Namespace
metadata: {name: ml, labels: {team: research}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: x}
spec: {}
""")
    assert ps.namespace_labels("ml") == (("kubernetes.io/metadata.name", "ml"), ("team", "research"))
    assert ps.namespace_labels("other") == (("kubernetes.io/metadata.name", "other"),)
    assert ps.policies_selecting(XA) == []


def test_policies_selecting_is_ordered_and_deduplicated() -> None:
    ps = pset(CNP_B_FROM_A_80 + "---" + CCNP_DENY_A_80 + "---" + NP_X_B_NAMED)
    assert [str(p) for p in ps.policies_selecting(XB)] == [
        "CiliumClusterwideNetworkPolicy/deny-a-80",
        "CiliumNetworkPolicy/x/b-from-a",
        "NetworkPolicy/x/b-named",
    ]


def test_unmodelled_fields_are_warned() -> None:
    ps = pset("""
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: svc, namespace: x}
spec:
  endpointSelector: {}
  egress:
  - toServices: [{k8sService: {serviceName: api, namespace: x}}]
""")
    assert any("toServices" in w for w in ps.warnings)
    assert not ps.evaluate(XA, XB, 80, "TCP").allowed


def test_evaluations_are_cached() -> None:
    ps = pset(CNP_B_FROM_A_80)
    assert ps.evaluate(XA, XB, 80, "TCP") is ps.evaluate(XA, XB, 80, "tcp")


def test_scales_with_namespaces_not_policies() -> None:
    docs = []
    for i in range(10_000):
        docs.append(({
            "apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
            "metadata": {"name": f"p{i}", "namespace": f"ns{i % 1000}"},
            "spec": {"endpointSelector": {"matchLabels": {"app": f"a{i % 7}"}},
                     "ingress": [{"fromEndpoints": [{"matchLabels": {"app": "client"}}],
                                  "toPorts": [{"ports": [{"port": str(8000 + i % 50), "protocol": "TCP"}]}]}]},
        }, SourceRef("big.yaml", i + 1, 1)))
    ps = PolicySet.from_objects(docs)
    client = PodClass("ns5", (("app", "client"),))
    server = PodClass("ns5", (("app", "a5"),))
    t0 = time.perf_counter()
    for port in range(8000, 8050):
        ps.evaluate(client, server, port, "TCP")
    elapsed = time.perf_counter() - t0
    # only ns5's ten policies are looked at; scanning 10,000 per call would be far slower
    assert len(ps.selection.units_for(server)) == len([i for i in range(10_000) if i % 1000 == 5 and i % 7 == 5])
    assert elapsed < 0.5, elapsed
