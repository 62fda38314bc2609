"""A request: what it rewrites (its targets), how they settle, and its one run through the runner.

Every kind of request is a list of targets run through the one runner (`runner.Runner`), a single
target being a request of one:

| kind | its targets | settles |
|---|---|---|
| `refactor` | the region a cursor or a selection gets (`at_cursor`: its plan, made here, chose it) | alone |
| `each` | each definition a selection touches, or each top-level one of files (`each_definition`) | each alone |
| `apply` | each definition a snippet names, with its part of the snippet (`snippet_parts`) | all or none |

A fourth kind is one more function that returns a `Request` and its line in `KINDS`; the server
and the CLI find its targets through `KINDS` and run whatever it returns the same way, and outcome.py
records it. The functions are synchronous and pure, each takes the engine (for a plan) and the
sources, and raises `NoTargets` with a message for the user; the server runs those that read the
file line by line in a worker thread (`Kind.in_thread`), on a scope cache of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from ..regions.definition import Definition
from ..regions.targets import Target
from ..text import count_of, split_lines
from .plan import APPLY_TITLE, RefactorError, action_title
from .runner import MAX_TARGETS, Item, Source

if TYPE_CHECKING:
    from .engine import Engine

RequestKind = Literal["refactor", "each", "apply"]


class NoTargets(Exception):
    """The request has nothing to run (an empty file, no definition, a snippet that names none, too many
    targets); nothing was sent. `outcome` says which for an agent: "error", or "not placed"."""

    def __init__(self, message: str, outcome: str = "error") -> None:
        super().__init__(message)
        self.outcome = outcome


@dataclass(frozen=True)
class Request:
    """What one request runs: its targets in document order, and how they settle."""

    kind: RequestKind
    items: tuple[Item, ...]
    title: str  # what the editor's progress calls it: "add type hints, each of 3 definitions in the file"
    whole: bool = False  # all or none: a target that fails leaves the others unapplied (a snippet is one change)
    notes: tuple[str, ...] = ()  # what was skipped, for people: a file without a definition
    action: str = ""  # what is asked, in words: "add type hints", "apply the snippet"

    @property
    def one(self) -> bool:
        """Reported as one refactor (its message, stats and reply): a cursor's, or a snippet of one part."""
        return self.kind != "each" and len(self.items) == 1

    def describe(self) -> str:
        """Where it goes, for people: `method `Store.get` (lines 12-18); function `load` (lines 30-41)`."""
        shown = "; ".join(item.target.describe() for item in self.items[:3])
        return shown + (f" and {len(self.items) - 3} more" if len(self.items) > 3 else "")


def at_cursor(engine: Engine, sources: Sequence[Source]) -> Request:
    """The region a cursor (or a selection, or neither: the file) gets, planned here: its plan chose it."""
    (source,) = sources
    try:
        plan = engine.plan(source.request, source.config, source.cache)
    except RefactorError as exc:
        raise NoTargets(str(exc)) from None
    region = plan.region
    first = len(split_lines(source.request.text[: region.start]))  # as LSP counts lines
    last = first + max(region.lines - 1, 0)
    definition = (
        region.definition if region.kind == "block" and region.definition else Definition(first, last, region.kind)
    )
    target = Target(region.start, region.end, first, last, definition, region.start)
    item = Item(source.document, target, plan.request, source.config, source.cache, plan)
    return Request("refactor", (item,), plan.title, action=plan.title)


def each_definition(engine: Engine, sources: Sequence[Source]) -> Request:
    """Each definition the selection touches in each source, or every top-level one of a source without
    a selection: each the exact region a cursor in it gets. A source without any is named in the
    request's `notes` and skipped; NoTargets when none has one, or past MAX_TARGETS."""
    from ..regions.targets import definitions_touched, top_level_definitions

    items: list[Item] = []
    notes: list[str] = []
    for source in sources:
        text, cache, language = source.request.text, source.cache, source.language
        if source.selection is None:
            targets = top_level_definitions(text, language, cache)
        else:
            targets = definitions_touched(text, *source.selection, language, cache)
        if not targets:
            notes.append(f"{source.document}: no definition found ({language}); nothing to refactor there")
        items += definition_items(source, targets)
    where = (
        "the selection"
        if len(sources) == 1 and sources[0].selection
        else ("the file" if len(sources) == 1 else count_of(len(sources), "file"))
    )
    if not items:
        languages = ", ".join(sorted({s.language for s in sources}))
        raise NoTargets(f"no definition found in {where} ({languages}); select lines to rewrite them")
    if len(items) > MAX_TARGETS:
        raise NoTargets(
            f"{count_of(len(items), 'definition')} is more than one request takes ({MAX_TARGETS}); select less"
            + (" or name fewer files" if len(sources) > 1 else "")
        )
    first = sources[0].request
    label = action_title(first.action_id or "instruction", first.instruction or "", sources[0].config)
    title = f"{label}, each of {count_of(len(items), 'definition')} in {where}"
    return Request("each", tuple(items), title, notes=tuple(notes), action=label)


def definition_items(source: Source, targets: Sequence[Target]) -> list[Item]:
    """The definitions of one source as targets: the source's request with the cursor where the scope
    rules choose each definition's region exactly."""
    request = source.request
    return [
        Item(
            source.document,
            t,
            replace(request, start=t.cursor, end=t.cursor, scope="block"),
            source.config,
            source.cache,
        )
        for t in targets
    ]


def snippet_parts(engine: Engine, sources: Sequence[Source]) -> Request:
    """The parts of the source's snippet (`RefactorRequest.snippet`: code a chat or an agent wrote) as
    merges into the definitions it names, each with its part: one change, applied whole or not at all."""
    from .merge import NotPlaced, Stopped, merge_items  # the placement's lexers: compiled on the first snippet

    (source,) = sources
    try:
        items = merge_items(source, source.request.snippet or "")
    except NotPlaced as exc:
        raise NoTargets(str(exc), "not placed") from None
    except Stopped:
        raise NoTargets("the apply was cancelled; nothing was sent", "cancelled") from None
    except RefactorError as exc:  # over the bounds (its size, its parts): said before anything is read
        raise NoTargets(str(exc), "usage") from None
    request = Request("apply", tuple(items), "", whole=True, action=APPLY_TITLE)
    return replace(request, title=f"{APPLY_TITLE} to {request.describe()}")


@dataclass(frozen=True)
class Kind:
    """How a kind of request finds its targets, and whether that is long work (a worker thread's)."""

    find: Callable[[Engine, Sequence[Source]], Request]
    in_thread: bool  # reads the whole file (definitions, placement): off the server's event loop


KINDS: dict[RequestKind, Kind] = {
    "refactor": Kind(at_cursor, in_thread=False),  # near the cursor, from the document's scope cache: quick
    "each": Kind(each_definition, in_thread=True),
    "apply": Kind(snippet_parts, in_thread=True),
}


def whole_file_item(source: Source) -> Item:
    """The source's whole snippet merged into the whole file, as an editor that rewrites the file does
    (the bench's comparison)."""
    from .merge import snippet_code

    request = source.request
    snippet = request.snippet or ""
    last = max(len(split_lines(request.text)) - 1, 0)
    target = Target(0, len(request.text), 0, last, Definition(0, last, "file"), 0)
    whole = replace(request, start=0, end=0, scope="file", snippet=snippet_code(snippet), instruction=None)
    return Item(source.document, target, whole, source.config)
