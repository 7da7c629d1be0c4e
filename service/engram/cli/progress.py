"""A progress bar on stderr for long commands, shown only on a terminal (scripts and logs get the
result alone)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

Update = Callable[..., None]


@contextlib.contextmanager
def progress(description: str) -> Iterator[Update]:
    """Yields update(done, total, what=None); a total of None (not known yet) shows a spinner and a
    count; ``what`` replaces the description. Off a terminal, ``what`` is printed as a line."""
    console = Console(stderr=True)
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int | None = None, what: str | None = None) -> None:
            bar.update(task, completed=done, total=total, description=what or description)
            if what and not console.is_terminal:
                console.print(what, highlight=False, soft_wrap=True)

        yield update
