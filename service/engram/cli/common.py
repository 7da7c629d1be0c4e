"""Shared pieces of the command line: the Typer apps, error mapping, output."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Annotated, Any, TypeVar

import asyncpg
import typer
from pydantic import ValidationError

from engram.domain.boundary import valid_user_id
from engram.domain.tenancy import TenantContext
from engram.errors import EngramError, invalid_input
from engram.runtime import Engram, database_url, engram_session
from engram.settings import Settings

app = typer.Typer(help="engram: long-term memory for LLM agents", no_args_is_help=True, add_completion=False)
tenant_app = typer.Typer(help="create, list, re-key and delete tenants", no_args_is_help=True)
db_app = typer.Typer(help="the embedded PostgreSQL used when ENGRAM_DATABASE_URL is unset", no_args_is_help=True)
users_app = typer.Typer(help="the end users of a tenant: list them, give them keys", no_args_is_help=True)
app.add_typer(tenant_app, name="tenant")
app.add_typer(users_app, name="users")
app.add_typer(db_app, name="db")

DEFAULT_TENANT = "default"
T = TypeVar("T")
TenantOpt = Annotated[
    str,
    typer.Option(
        "--tenant", "-t", envvar="ENGRAM_TENANT", help="tenant name (default: ENGRAM_TENANT, else make run's)"
    ),
]
UserOpt = Annotated[
    str | None,
    typer.Option("--user-id", "-u", help="act for this end user: their memories and the tenant's shared ones"),
]
OwnOpt = Annotated[bool, typer.Option("--own-only", help="with --user-id: that user's memories only")]
YesOpt = Annotated[bool, typer.Option("--yes", help="do not ask (it cannot be undone)")]


async def acting(engram: Engram, tenant: str, user_id: str | None) -> TenantContext:
    """The tenant, acting for the user named (checked as REST checks it)."""
    context = await engram.tenants.resolve(tenant)
    return context.pinned_to(valid_user_id(user_id) if user_id is not None else None)


def confirm(yes: bool, question: str, refused: str) -> None:
    """Ask before what cannot be undone, unless --yes; a no stops with exit 1."""
    if not yes and not typer.confirm(question):
        raise fail(refused, 1)


def fail(message: str, code: int) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code)


def command(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Every expected failure is one line on stderr and exit code 2: bad input or state, bad
    configuration, a database out of reach. A traceback (exit 1) means a bug."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EngramError as exc:
            raise fail(str(exc), 2) from None
        except ValidationError as exc:
            raise fail(_problems(exc), 2) from None
        except (OSError, asyncpg.PostgresConnectionError, asyncpg.InvalidAuthorizationSpecificationError) as exc:
            raise fail(f"cannot reach the database: {exc or type(exc).__name__}", 2) from None

    wrapper.__doc__ = reflowed(fn.__doc__)
    return wrapper


def reflowed(doc: str | None) -> str | None:
    """A docstring's paragraphs each on one line: the help's table wraps them to the terminal,
    where the source's line breaks would cut phrases in the middle."""
    if doc is None:
        return None
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in inspect.cleandoc(doc).split("\n\n"))


def _problems(exc: ValidationError) -> str:
    """'bad configuration: ENGRAM_PORT: Input should be a valid integer', or for an argument
    'invalid input: content: ...'."""
    problems = exc.errors(include_url=False, include_input=False)
    if exc.title != "Settings":
        return f"invalid input: {invalid_input(problems)}"
    variables = ("ENGRAM_" + "__".join(str(part) for part in p["loc"]).upper() for p in problems)
    return "bad configuration: " + "; ".join(f"{v}: {p['msg']}" for v, p in zip(variables, problems, strict=True))


def with_engram(settings: Settings, work: Callable[[Engram], Awaitable[T]]) -> T:
    async def run() -> T:
        with database_url(settings) as dsn:
            async with engram_session(settings, dsn) as engram:
                return await work(engram)

    return asyncio.run(run())


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


# Where a running `engram serve`/`engram dev` says it listens, so `engram tenant create` in another
# shell prints URLs that work without the same ENGRAM_PORT exported there.
SERVING = "serving.json"


def announce_service(settings: Settings) -> None:
    path = settings.state_dir / SERVING
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"url": settings.base_url(), "pid": os.getpid()}))


def withdraw_service(settings: Settings) -> None:
    path = settings.state_dir / SERVING
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()


def service_url(settings: Settings) -> str:
    """The configured public URL, else the URL a running service on this machine announced, else
    the one ENGRAM_HOST and ENGRAM_PORT make."""
    if settings.public_url:
        return settings.base_url()
    with contextlib.suppress(OSError, ValueError, AttributeError):
        announced = json.loads((settings.state_dir / SERVING).read_text())
        os.kill(int(announced["pid"]), 0)  # still running
        return str(announced["url"]).rstrip("/")
    return settings.base_url()
