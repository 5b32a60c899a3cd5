"""CEL with a real engine (PyPI `common-expression-language`): the CRDs' own validation rules
and the generated ValidatingAdmissionPolicies, evaluated as the API server would.

What is real: the CEL parser and evaluator. What this module adds, and says so: the API
server's walk that binds `self` at each schema node carrying `x-kubernetes-validations`, and
the ValidatingAdmissionPolicy flow (variables, then each validation; false -> the message, an
evaluation error -> failurePolicy Fail). tests/oracles/test_cluster_admission.py holds these verdicts against the real kube-apiserver.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import cel
from conftest import crd_schemas


def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    return crd_schemas()  # conftest's, parsed once per session (the CRD files take seconds)


@functools.cache
def _program(expr: str) -> Any:
    return cel.compile(expr)


def evaluate(expr: str, context: dict[str, Any]) -> Any:
    return _program(expr).execute(context)


def crd_rule_errors(obj: dict[str, Any]) -> tuple[list[str], int]:
    """(failed rules, rules evaluated) of the object's CRD `x-kubernetes-validations`.

    Transition rules (those reading `oldSelf`) only apply to updates and are skipped."""
    schema = _crd_schemas().get((str(obj.get("apiVersion")), str(obj.get("kind"))))
    if schema is None:
        raise LookupError(f"no CRD for {obj.get('apiVersion')} {obj.get('kind')}")
    errors: list[str] = []
    count = 0

    def walk(node: dict[str, Any], value: Any, path: str) -> None:
        nonlocal count
        for v in node.get("x-kubernetes-validations", []):
            if "oldSelf" in v["rule"]:
                continue
            count += 1
            try:
                ok = evaluate(v["rule"], {"self": value})
            except Exception as e:  # an evaluation error is a rejection too
                errors.append(f"{path or '/'}: {v['rule']!r} errored: {e}")
                continue
            if ok is not True:
                errors.append(f"{path or '/'}: {v.get('message', v['rule'])}")
        if isinstance(value, dict):
            for k, sub in node.get("properties", {}).items():
                if k in value:
                    walk(sub, value[k], f"{path}/{k}")
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                for k, sub_v in value.items():
                    walk(extra, sub_v, f"{path}/{k}")
        elif isinstance(value, list) and isinstance(node.get("items"), dict):
            for i, item in enumerate(value):
                walk(node["items"], item, f"{path}/{i}")

    walk(schema, obj, "")
    return errors, count


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    messages: tuple[str, ...]  # one per failed validation, in the policy's order


def admit(policy: dict[str, Any], obj: dict[str, Any]) -> Verdict:
    """Evaluate a ValidatingAdmissionPolicy's variables and validations on `obj` (a CREATE).

    Matching (resources, namespaces) is the binding's and the API server's business; callers
    check `matches()` first."""
    spec = policy["spec"]
    variables: dict[str, Any] = {}
    context: dict[str, Any] = {"object": obj, "oldObject": None, "variables": variables}
    for v in spec.get("variables", []):
        # Variables are lazy in the API server; an error surfaces where one is used. Evaluating
        # eagerly is the same for a policy whose every validation uses every variable it errors on.
        try:
            variables[v["name"]] = evaluate(v["expression"], context)
        except Exception as e:
            return Verdict(False, (f"variable {v['name']} errored: {e}",))
    messages: list[str] = []
    for val in spec["validations"]:
        try:
            ok = evaluate(val["expression"], context)
        except Exception as e:  # failurePolicy: Fail
            messages.append(f"expression errored: {e}")
            continue
        if ok is not True:
            text = val.get("message", "")
            if "messageExpression" in val:
                text = str(evaluate(val["messageExpression"], context))
            messages.append(text)
    return Verdict(not messages, tuple(messages))


def matches(policy: dict[str, Any], obj: dict[str, Any], namespaces: list[str]) -> bool:
    """Whether the policy's matchConstraints select `obj` (its kind's resource, its namespace
    among `namespaces`, the managed ones the namespaceSelector lists)."""
    mc = policy["spec"]["matchConstraints"]
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    plural = str(obj["kind"]).lower() + "s"
    hit = any(group in r["apiGroups"] and plural in r["resources"] and "CREATE" in r["operations"]
              and ("*" in r["apiVersions"] or version in r["apiVersions"])
              for r in mc["resourceRules"])
    ns = obj["metadata"].get("namespace")
    return hit and ns in namespaces
