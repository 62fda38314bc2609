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

    The traversal uses an explicit stack rather than recursion, so very deep
    dependency chains cannot hit the interpreter's recursion limit.
    """
    order: List[str] = []
    state: Dict[str, int] = {}

    for target in targets:
        if state.get(target) == DONE:
            continue
        if target not in graph:
            raise UnknownTargetError(target, None)
        state[target] = VISITING
        path: List[str] = [target]
        pending = [iter(graph[target].deps)]
        while pending:
            dep = next(pending[-1], None)
            if dep is None:
                pending.pop()
                finished = path.pop()
                state[finished] = DONE
                order.append(finished)
                continue
            status = state.get(dep)
            if status == DONE:
                continue
            if status == VISITING:
                raise CycleError(path[path.index(dep):] + [dep])
            if dep not in graph:
                raise UnknownTargetError(dep, path[-1])
            state[dep] = VISITING
            path.append(dep)
            pending.append(iter(graph[dep].deps))
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
