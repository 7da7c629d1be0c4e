"""`python -m engram_operator`: run the MemoryTenant operator (kopf) with the configuration file
named by ENGRAM_OPERATOR_CONFIG. One copy acts at a time: it waits for a Lease (leadership.py)
before it acts, and exits 1 if it loses it. On SIGTERM it stops within a few seconds, hands the
Lease back and exits 0, even in the middle of a reconciliation."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Coroutine
from typing import Any, NoReturn

import kopf
from pydantic import ValidationError

from engram_operator import metrics
from engram_operator.config import OperatorConfig
from engram_operator.handlers import Operator, register
from engram_operator.kube import Kube, load_configuration
from engram_operator.leadership import Leadership
from engram_operator.standby import standby_liveness, until_signalled

# How long the stopped operator waits for what is left (tasks, threads) before exiting anyway.
GRACE_SECONDS = 2.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engram_operator", description=__doc__)
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", action="append", default=[], help="watch this namespace (repeatable)")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="watch every namespace")
    parser.add_argument("--liveness", metavar="URL", help="serve a liveness probe, e.g. http://0.0.0.0:8080/healthz")
    parser.add_argument("--metrics-port", type=int, metavar="PORT", help="serve Prometheus metrics at :PORT/metrics")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--log-format", choices=["plain", "full", "json"], default="json")
    args = parser.parse_args(argv)
    if not args.namespace and not args.all_namespaces:
        parser.error("name the namespaces to watch (--namespace NS) or --all-namespaces")
    try:
        config = OperatorConfig.load()
    except (OSError, ValueError, ValidationError) as e:
        print(f"engram-operator: bad configuration: {e}", file=sys.stderr)
        return 2
    if args.metrics_port is not None:
        try:
            metrics.serve(args.metrics_port)
        except OSError as e:
            print(f"engram-operator: cannot serve metrics on port {args.metrics_port}: {e}", file=sys.stderr)
            return 2
    kopf.configure(verbose=args.verbose, log_format=kopf.LogFormat[args.log_format.upper()])
    registry = kopf.OperatorRegistry()
    register(registry, Operator(config))
    settings = kopf.OperatorSettings()
    # Not asyncio.run(): once the operator has stopped, it would wait without end for tasks that
    # ignore cancellation and for worker threads still blocked (a DNS lookup, say).
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        code = loop.run_until_complete(_serve(args, config, registry, settings))
        loop.run_until_complete(_cancel_leftovers())
    finally:
        settings.execution.executor.shutdown(wait=False, cancel_futures=True)
        loop.close()  # shuts its thread pool down without waiting
    return code


async def _serve(
    args: argparse.Namespace, config: OperatorConfig, registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings
) -> int:
    """Wait for the lease (serving liveness meanwhile), then run kopf while holding it. 0 on a
    stop by signal, 1 when the lease was lost (the pod restarts and becomes a candidate again)."""

    def operate(stop_flag: asyncio.Event | None = None) -> Coroutine[Any, Any, None]:
        # On SIGTERM kopf gives the handlers under way settings.queueing.exit_timeout (2 s) to
        # finish, then cancels them; they give up promptly (see handlers.py and provision.py).
        return kopf.operator(
            registry=registry,
            settings=settings,
            standalone=True,  # kopf's peering is not needed: the lease admits one operator
            clusterwide=args.all_namespaces,
            namespaces=args.namespace,
            liveness_endpoint=args.liveness,
            stop_flag=stop_flag,
        )

    if not config.leader_election.enabled:
        await operate()
        return 0
    kube = Kube(load_configuration())
    leadership = Leadership(kube, config.leader_election, config.leader_election.lease_namespace())
    try:
        async with standby_liveness(args.liveness):
            if not await until_signalled(leadership.acquire()):
                return 0
        stop_flag = asyncio.Event()
        operator = asyncio.create_task(operate(stop_flag))
        holding = asyncio.create_task(leadership.hold())
        await asyncio.wait({operator, holding}, return_when=asyncio.FIRST_COMPLETED)
        if not holding.done():  # kopf stopped (a signal): the next candidate need not wait
            holding.cancel()
            await leadership.release()
            await operator
            return 0
        logging.getLogger("engram_operator").error("stopping: %s", holding.exception())
        stop_flag.set()
        await operator
        return 1
    finally:
        await kube.close()


async def _cancel_leftovers() -> None:
    leftovers = asyncio.all_tasks() - {asyncio.current_task()}
    for task in leftovers:
        task.cancel()
    if leftovers:
        await asyncio.wait(leftovers, timeout=GRACE_SECONDS)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(GRACE_SECONDS):
            await asyncio.get_running_loop().shutdown_asyncgens()


def exit_promptly(code: int) -> NoReturn:
    """Exit with ``code`` once the threads still working have had GRACE_SECONDS to finish. The
    interpreter would join them without a limit: a thread blocked on the network would keep the
    stopped operator's process alive until Kubernetes kills it."""
    deadline = time.monotonic() + GRACE_SECONDS
    others = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    for thread in others:
        thread.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in others if t.is_alive()]
    if not stuck:
        sys.exit(code)
    logging.getLogger("engram_operator").warning("exiting without waiting for the threads still busy: %s", stuck)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_promptly(main())
