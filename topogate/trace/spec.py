"""Parsing ``--from``/``--to`` specs and ``--port``: text in, ``Spec`` or a port triple out,
``TraceError`` on anything malformed.  Nothing here reads manifests."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from topogate.k8s.jobs import GROUP_KIND
from topogate.trace.model import TraceError

ENTITIES = (
    "world",
    "world-ipv4",
    "world-ipv6",
    "host",
    "remote-node",
    "kube-apiserver",
    "cluster",
    "health",
    "init",
    "ingress",
    "unmanaged",
)
PROTOCOLS = ("TCP", "UDP", "SCTP")

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def parse_port(text: str) -> tuple[int | None, str | None, str | None]:
    """``8080``, ``8080/udp``, ``metrics``, ``metrics/TCP`` -> (number, name, protocol or None)."""
    raw = text.strip()
    body, _, proto = raw.partition("/")
    protocol: str | None = None
    if proto:
        protocol = proto.upper()
        if protocol not in PROTOCOLS:
            raise TraceError(f"--port {text!r}: protocol must be TCP, UDP or SCTP")
    if body.isascii() and body.isdigit():  # str.isdigit is also true for '²', which int() refuses
        number = int(body)
        if not 1 <= number <= 65535:
            raise TraceError(f"--port {text!r}: port must be 1-65535")
        return number, None, protocol
    if _DNS1123_LABEL.match(body) and len(body) <= 15:  # IANA_SVC_NAME, as containerPort names
        return None, body, protocol
    raise TraceError(f"--port {text!r}: expected PORT[/TCP|UDP|SCTP] or a container-port name")


@dataclass(frozen=True)
class Spec:
    kind: str  # workload | labels | entity | cidr | fqdn
    text: str
    namespace: str = ""
    workload_kind: str = ""
    name: str = ""
    group: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    value: str = ""


def parse_spec(text: str, flag: str) -> Spec:
    raw = text.strip()
    if not raw:
        raise TraceError(f"{flag}: empty; expected ns/Kind/name[/group], ns:key=value, an entity or a CIDR")
    if raw in ENTITIES:
        return Spec("entity", raw, value=raw)
    node = _NODE.match(raw)
    if node is not None:
        # A node with its labels, as topogate prints one: what fromNodes/toNodes select by
        # (enable-node-selector-labels); a node without them may be any node.
        labels = _label_pairs(node[2], flag, text)
        return Spec("entity", raw, value=node[1], labels=labels)
    if raw.startswith("fqdn:"):
        name = raw[len("fqdn:"):].strip().lower().rstrip(".")
        if not name:
            raise TraceError(f"{flag} {text!r}: fqdn: needs a DNS name")
        return Spec("fqdn", raw, value=name)
    try:
        net = ipaddress.ip_network(raw, strict=False)
        return Spec("cidr", raw, value=str(net))
    except ValueError:
        pass
    if "/" in raw and ":" not in raw.split("/", 1)[0]:
        parts = raw.split("/")
        # A topogate.dev/group job's groups are named Kind/name: ns/Group/value/Deployment/name.
        group_job = len(parts) == 5 and parts[1].lower() == GROUP_KIND.lower()
        if not (len(parts) in (3, 4) or group_job) or not all(parts):
            raise TraceError(f"{flag} {text!r}: expected ns/Kind/name or ns/Kind/name/group")
        _check_namespace(parts[0], flag, text)
        return Spec(
            "workload", raw, namespace=parts[0], workload_kind=parts[1], name=parts[2],
            group="/".join(parts[3:]) if len(parts) > 3 else None,
        )
    if ":" in raw:
        ns, _, rest = raw.partition(":")
        _check_namespace(ns, flag, text)
        pairs = _label_pairs(rest, flag, text)
        for key, _value in pairs:
            if key.startswith(("io.kubernetes.pod.", "io.cilium.k8s.")):
                # Cilium derives these from the pod's namespace and service account; a pod
                # label cannot set them, so a trace that pretends it does would mislead.
                raise TraceError(f"{flag} {text!r}: {key!r} is set by Cilium, not by a pod label; "
                                 "put the namespace before the colon")
        return Spec("labels", raw, namespace=ns, labels=pairs)
    known = ", ".join(ENTITIES[:5])
    raise TraceError(
        f"{flag} {text!r}: not a workload (ns/Kind/name[/group]), a label set (ns:key=value), "
        f"an entity ({known}, ...) or a CIDR"
    )


_NODE = re.compile(r"^(host|remote-node)\{(.*)\}$")


def _label_pairs(rest: str, flag: str, text: str) -> tuple[tuple[str, str], ...]:
    """``key=value,key=value`` as sorted pairs."""
    labels: dict[str, str] = {}
    for item in (p.strip() for p in rest.split(",")):
        if not item:
            continue
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not _valid_label_key(key) or not _LABEL_VALUE.match(value):
            raise TraceError(f"{flag} {text!r}: {item!r} is not a label key=value")
        if key in labels and labels[key] != value:
            raise TraceError(f"{flag} {text!r}: label {key!r} given twice")
        labels[key] = value
    return tuple(sorted(labels.items()))


def _check_namespace(ns: str, flag: str, text: str) -> None:
    if not _DNS1123_LABEL.match(ns) or len(ns) > 63:
        raise TraceError(f"{flag} {text!r}: {ns!r} is not a namespace name")


def _valid_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and not (prefix and len(prefix) <= 253 and re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", prefix)):
        return False
    return bool(_LABEL_NAME.match(name)) and len(name) <= 63
