"""The ``engram`` command line. Bad input exits with code 2 and a message on stderr."""

import sys

from engram.cli import (  # noqa: F401 - registering the commands
    admin,
    erasure,
    evaluation,
    memories,
    retention,
    retrieval,
    servers,
    transfer,
    users,
)
from engram.cli.common import app


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
