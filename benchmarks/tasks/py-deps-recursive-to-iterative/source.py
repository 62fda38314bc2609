"""Dependency resolution for build targets declared in a BUILD manifest."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence

VISITING = 1
DONE = 2


class CycleError(Exception):
    def __init__(self, cycle: Sequence[str]) -> None:
        super().__init__("dependency cycle: " + " -> ".join(cycle))
        self.cycle = list(cycle)


class UnknownTargetError(KeyError):
    def __init__(self, name: str, required_by: Optional[str]) -> None:
        where = f" (required by {required_by})" if required_by else ""
        super().__init__(f"unknown target {name!r}{where}")
        self.name = name
        self.required_by = required_by


@dataclass
class Target:
    name: str
    kind: str
    deps: List[str] = field(default_factory=list)
    sources: List[str] = field(default_factory=list)
    tags: List[str] = field(default_factory=list)


def parse_manifest(text: str) -> Dict[str, Target]:
    """Parse lines of the form `kind name: dep1 dep2 [#tag ...]`."""
    graph: Dict[str, Target] = {}
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        head, _, tail = line.partition(":")
        parts = head.split()
        if len(parts) != 2:
            raise ValueError(f"line {line_no}: expected 'kind name:', got {head!r}")
        kind, name = parts
        if name in graph:
            raise ValueError(f"line {line_no}: duplicate target {name!r}")
        deps = [tok for tok in tail.split() if not tok.startswith("#")]
        tags = [tok[1:] for tok in tail.split() if tok.startswith("#")]
        graph[name] = Target(name=name, kind=kind, deps=deps, tags=tags)
    return graph


def resolve_order(targets: Iterable[str], graph: Dict[str, Target]) -> List[str]:
    """Return `targets` and all of their dependencies, dependencies first.

    Raises CycleError if the graph contains a cycle reachable from the targets
    and UnknownTargetError if a dependency is not declared in the graph.
    """
    order: List[str] = []
    state: Dict[str, int] = {}

    def visit(name: str, path: List[str]) -> None:
        status = state.get(name)
        if status == DONE:
            return
        if status == VISITING:
            raise CycleError(path[path.index(name):] + [name])
        if name not in graph:
            raise UnknownTargetError(name, path[-1] if path else None)
        state[name] = VISITING
        path.append(name)
        for dep in graph[name].deps:
            visit(dep, path)
        path.pop()
        state[name] = DONE
        order.append(name)

    for target in targets:
        visit(target, [])
    return order


def reverse_deps(graph: Dict[str, Target]) -> Dict[str, List[str]]:
    rdeps: Dict[str, List[str]] = {name: [] for name in graph}
    for target in graph.values():
        for dep in target.deps:
            rdeps.setdefault(dep, []).append(target.name)
    return rdeps


def select(graph: Dict[str, Target], pattern: str, tag: Optional[str] = None) -> List[str]:
    """Names of targets matching a glob pattern and, optionally, carrying a tag."""
    return sorted(
        name
        for name, target in graph.items()
        if fnmatch.fnmatchcase(name, pattern) and (tag is None or tag in target.tags)
    )


def build_plan(graph: Dict[str, Target], pattern: str = "*", tag: Optional[str] = None) -> List[str]:
    return resolve_order(select(graph, pattern, tag), graph)
