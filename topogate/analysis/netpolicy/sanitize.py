"""What the Cilium agent refuses in a CiliumNetworkPolicy or CiliumClusterwideNetworkPolicy that
the CRD schema lets through. The agent sanitizes every rule of every ``spec``/``specs`` entry
before it imports anything (pkg/policy/api rule_validation.go, called from the CRDs' ``Parse``);
one error and the whole object is not imported, its default deny included. The reasons are the
agent's own words, so a user can find them in its log.

Checked, in the agent's order: a rule with no section; endpointSelector and nodeSelector (one,
not both; a namespaced policy none); per rule, two peer kinds together (``toEndpoints`` with
``toCIDR``, ...), fromNodes/toNodes without enable-node-selector-labels, an entity the version
does not know, CIDRs and excepts (an except outside its CIDR), ICMP rules beside toPorts, L7 rules
(DNS on ingress, L7 on a port 0 or without ports for DNS, L7 not on TCP but DNS, more than one
kind), and each port (present, a number up to 65535 or a port name, at most 40 per entry). And
what the API server refuses where the CRD of the version says so: fromRequires/toRequires items
from 1.19 on (``maxItems: 0``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from topogate.analysis.netpolicy.agent import Agent

__all__ = ["sanitize"]

Problem = tuple[tuple[str | int, ...], str, str]  # (path inside the object, reason, who refuses)

_AGENT = "the agent"
_API = "the API server"
# The peer keys counted against each other, per direction, as the agent names them in its message.
_INGRESS_L3 = (("fromEndpoints", "FromEndpoints"), ("fromCIDR", "FromCIDR"), ("fromCIDRSet", "FromCIDRSet"),
               ("fromEntities", "FromEntities"), ("fromNodes", "FromNodes"), ("fromGroups", "FromGroups"))
_EGRESS_L3 = (("toCIDR", "ToCIDR"), ("toCIDRSet", "ToCIDRSet"), ("toEndpoints", "ToEndpoints"),
              ("toEntities", "ToEntities"), ("toServices", "ToServices"), ("toGroups", "ToGroups"),
              ("toNodes", "ToNodes"), ("toFQDNs", "ToFQDNs"))
_ENTITIES = frozenset({"all", "world", "world-ipv4", "world-ipv6", "cluster", "host", "init", "ingress",
                       "unmanaged", "remote-node", "health", "none", "kube-apiserver"})
_MAX_PORTS = 40
# An IANA service name (pkg/iana): a port name, not a number, even "0x10".
_SVC_NAME = re.compile(r"^(?=.{1,15}$)([a-zA-Z0-9]-?)*[a-zA-Z](-?[a-zA-Z0-9])*$")
_NODES_FLAG = 'FromNodes/ToNodes rules can only be applied when the "enable-node-selector-labels" flag is set'
_ICMP_WITH_PORTS = "the ICMPs block may only be present without ToPorts. Define a separate rule to use ToPorts"


def _items(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def sanitize(obj: Mapping[str, Any], agent: Agent) -> Problem | None:
    """The first thing the agent (or the API server) refuses in the object, or None."""
    namespaced = obj.get("kind") == "CiliumNetworkPolicy"
    entries: list[tuple[tuple[str | int, ...], Any]] = []
    if isinstance(obj.get("spec"), Mapping):
        entries.append((("spec",), obj["spec"]))
    entries += [(("specs", i), sp) for i, sp in enumerate(_items(obj.get("specs"))) if isinstance(sp, Mapping)]
    for path, spec in entries:
        got = _spec(path, spec, namespaced, agent)
        if got is not None:
            return got
    return None


def _spec(path: tuple[str | int, ...], spec: Mapping[str, Any], namespaced: bool, agent: Agent) -> Problem | None:
    if not any(_items(spec.get(k)) for k in ("ingress", "ingressDeny", "egress", "egressDeny")):
        return path, "rule must have at least one of Ingress, IngressDeny, Egress, EgressDeny", _AGENT
    has_ep, has_node = spec.get("endpointSelector") is not None, spec.get("nodeSelector") is not None
    if not has_ep and not has_node:
        return path, "rule must have one of EndpointSelector or NodeSelector", _AGENT
    if has_ep and has_node:
        return path, "rule cannot have both EndpointSelector and NodeSelector", _AGENT
    host = has_node
    for section, ingress, deny in (("ingress", True, False), ("ingressDeny", True, True),
                                   ("egress", False, False), ("egressDeny", False, True)):
        for i, rule in enumerate(_items(spec.get(section))):
            if isinstance(rule, Mapping):
                got = _rule((*path, section, i), rule, ingress, deny, host, agent)
                if got is not None:
                    return got
    if namespaced and has_node:
        return (*path, "nodeSelector"), "rule cannot have NodeSelector", _AGENT
    return None


def _rule(path: tuple[str | int, ...], rule: Mapping[str, Any], ingress: bool, deny: bool, host: bool,
          agent: Agent) -> Problem | None:
    requires = "fromRequires" if ingress else "toRequires"
    if _items(rule.get(requires)) and not agent.requires_enforced:
        return ((*path, requires), f"{requires} must have at most 0 items in the CRD of Cilium "
                f"{agent.version} (deprecated in 1.17, gone in 1.19)", _API)
    members = [(k, name) for k, name in (_INGRESS_L3 if ingress else _EGRESS_L3) if _items(rule.get(k))]
    if len(members) > 1:
        (k1, n1), (_, n2) = members[0], members[1]
        return (*path, k1), f"combining {n1} and {n2} is not supported yet", _AGENT
    nodes = "fromNodes" if ingress else "toNodes"
    if _items(rule.get(nodes)) and not agent.enable_node_selector_labels:
        return (*path, nodes), _NODES_FLAG, _AGENT
    entities = "fromEntities" if ingress else "toEntities"
    known = _ENTITIES | ({"cluster-mesh"} if agent.has_cluster_mesh_entity else set())
    for e in _items(rule.get(entities)):
        if str(e) not in known:
            return (*path, entities), f"unsupported entity: {e}", _AGENT
    for key in (("fromCIDRSet",) if ingress else ("toCIDRSet",)):
        for j, c in enumerate(_items(rule.get(key))):
            why = _cidr_rule(c)
            if why is not None:
                return (*path, key, j), why, _AGENT
    ports = _items(rule.get("toPorts"))
    if _items(rule.get("icmps")) and ports:
        return (*path, "icmps"), _ICMP_WITH_PORTS, _AGENT
    if not deny:
        got = _l7_kinds(path, ports, ingress, host)
        if got is not None:
            return got
    for j, pr in enumerate(ports):
        if isinstance(pr, Mapping):
            got = _port_rule((*path, "toPorts", j), pr, ingress, deny)
            if got is not None:
                return got
    return None


def _cidr_rule(c: Any) -> str | None:
    if not isinstance(c, Mapping):
        return None
    count = sum(1 for k in ("cidr", "cidrGroupRef") if c.get(k)) + (c.get("cidrGroupSelector") is not None)
    if count == 0:
        return "one of cidr, cidrGroupRef, or cidrGroupSelector is required"
    if count > 1:
        return "more than one of cidr, cidrGroupRef, or cidrGroupSelector may not be set"
    if not c.get("cidr"):
        return None
    try:
        net = ipaddress.ip_network(str(c["cidr"]), strict=False)
    except ValueError:
        return f"unable to parse CIDRRule {c['cidr']!r}"
    for x in _items(c.get("except")):
        try:
            exc = ipaddress.ip_network(str(x), strict=False)
        except ValueError:
            return f"unable to parse except {x!r}"
        if exc.version != net.version or net.prefixlen > exc.prefixlen or exc.network_address not in net:
            return f"allow CIDR prefix {c['cidr']} does not contain exclude CIDR prefix {x}"
    return None


def _parse_uint(value: str) -> int | None:
    """strconv.ParseUint(value, 0, ...) of a string with no letter (a letter makes it a port
    name): decimal, or octal after a leading 0."""
    if not (value.isascii() and value.isdigit()):
        return None
    if len(value) > 1 and value.startswith("0"):
        return int(value, 8) if all(ch in "01234567" for ch in value) else None
    return int(value)


def _l7_kinds(path: tuple[str | int, ...], ports: list[Any], ingress: bool, host: bool) -> Problem | None:
    """L7 rule kinds the direction does not take (countL7Rules / l7IngressSupport)."""
    dns = any(isinstance(p, Mapping) and isinstance(p.get("rules"), Mapping) and p["rules"].get("dns")
              for p in ports)
    http = any(isinstance(p, Mapping) and isinstance(p.get("rules"), Mapping) and p["rules"].get("http")
               for p in ports)
    if ingress and host and (dns or http):
        return (*path, "toPorts"), "L7 policy is not supported on host ingress yet", _AGENT
    if ingress and dns:
        return (*path, "toPorts"), "L7 protocol DNS is not supported on ingress yet", _AGENT
    if not ingress and host and http:
        return (*path, "toPorts"), "L7 protocol HTTP is not supported on host egress yet", _AGENT
    return None


def _port_rule(path: tuple[str | int, ...], pr: Mapping[str, Any], ingress: bool, deny: bool) -> Problem | None:
    raw_rules = pr.get("rules")
    # An empty list of a kind is no rule of it.
    rules = {k: v for k, v in raw_rules.items() if v} if isinstance(raw_rules, Mapping) else {}
    dns = bool(rules.get("dns"))
    if not deny:
        if ingress and dns:
            return (*path, "rules"), "DNS rules are not allowed on ingress", _AGENT
        names = _items(pr.get("serverNames"))
        if names and rules and pr.get("terminatingTLS") is None:
            return (*path, "serverNames"), "ServerNames are not allowed with L7 rules without TLS termination", _AGENT
        if "" in names:
            return (*path, "serverNames"), "empty server name is not allowed", _AGENT
    ports = _items(pr.get("ports"))
    if len(ports) > _MAX_PORTS:
        return (*path, "ports"), f"too many ports, the max is {_MAX_PORTS}", _AGENT
    zero = False
    for i, p in enumerate(ports):
        if not isinstance(p, Mapping):
            continue
        value = "" if p.get("port") is None else str(p.get("port"))
        where = (*path, "ports", i)
        if value == "":
            return where, "port must be specified", _AGENT
        if not _SVC_NAME.match(value):
            number = _parse_uint(value)
            if number is None:
                return where, f'unable to parse port: strconv.ParseUint: parsing "{value}": invalid syntax', _AGENT
            if not 0 <= number <= 65535:
                return where, f'unable to parse port: strconv.ParseUint: parsing "{value}": value out of range', _AGENT
            zero = zero or number == 0
            end = p.get("endPort")
            if dns and isinstance(end, int) and end > number:
                return where, "DNS rules do not support port ranges", _AGENT
        proto = str(p.get("protocol") or "ANY").upper()
        if rules and not dns and proto != "TCP" and not deny:
            return where, f"L7 rules can only apply to TCP (not {proto}) except for DNS rules", _AGENT
    if deny:
        return None
    listener = pr.get("listener")
    if listener is not None:
        name = listener.get("name") if isinstance(listener, Mapping) else ""
        if ingress:
            return (*path, "listener"), f"Listener is not allowed on ingress ({name})", _AGENT
        if rules:
            return (*path, "listener"), f"Listener is not allowed with L7 rules ({name})", _AGENT
    if rules:
        if zero:
            return (*path, "rules"), "L7 rules can not be used when a port is 0", _AGENT
        if dns and not ports:
            return (*path, "rules"), "port 53 must be specified for DNS rules", _AGENT
        if len(rules) > 1:
            return (*path, "rules"), "multiple L7 protocol rule types specified in single rule", _AGENT
    return None
