"""A Kubernetes object as topogate reads it: its content, where it starts, and how to find where
a part of it is written. Every layer above names this type; only sources/ (which reads files
and runs kustomize) knows how the parts are found, and hands each object its `locator`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from topogate.core.position import Position

ObjectPath = tuple[str | int, ...]  # keys and list indexes, from the object's top


class Locator(Protocol):
    """Where the parts of an object are written (sources/: the file it was read from, or the
    declaration and patches a kustomize build traces it back to)."""

    def locate(self, o: K8sObject, path: ObjectPath) -> Position: ...


@dataclass
class K8sObject:
    obj: dict[str, Any]
    pos: Position  # where the object starts (file as shown in findings)
    built_from: str = ""  # kustomization directory it was built from, if any
    src_file: str = ""  # the readable path of the file that declares it, for nested positions
    doc: int = -1  # index of its document in that file
    prefix: ObjectPath = ()  # path of the object inside its document (items of a List)
    locator: Locator | None = None  # None: every part is at `pos`

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion", ""))

    @property
    def name(self) -> str:
        md = self.obj.get("metadata")
        return str(md.get("name", "")) if isinstance(md, dict) else ""

    @property
    def namespace(self) -> str:
        md = self.obj.get("metadata")
        ns = md.get("namespace") if isinstance(md, dict) else None
        return str(ns) if ns else ""

    @property
    def ref(self) -> str:
        ns = self.namespace
        return f"{self.kind}/{ns}/{self.name}" if ns else f"{self.kind}/{self.name}"

    def locate(self, path: ObjectPath) -> Position:
        """Position of the value at path inside this object (nearest existing ancestor), lazily."""
        return self.locator.locate(self, path) if self.locator is not None else self.pos


__all__ = ["K8sObject"]
