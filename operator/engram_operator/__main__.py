"""`python -m engram_operator`: run the MemoryTenant operator (kopf) with the configuration file
named by ENGRAM_OPERATOR_CONFIG. One replica: it runs standalone, without kopf's peering."""

from __future__ import annotations

import argparse
import sys

import kopf
from pydantic import ValidationError

from engram_operator.config import OperatorConfig
from engram_operator.handlers import Operator, register


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engram_operator", description=__doc__)
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", action="append", default=[], help="watch this namespace (repeatable)")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="watch every namespace")
    parser.add_argument("--liveness", metavar="URL", help="serve a liveness probe, e.g. http://0.0.0.0:8080/healthz")
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
    kopf.configure(verbose=args.verbose, log_format=kopf.LogFormat[args.log_format.upper()])
    registry = kopf.OperatorRegistry()
    register(registry, Operator(config))
    kopf.run(
        registry=registry,
        standalone=True,
        clusterwide=args.all_namespaces,
        namespaces=args.namespace,
        liveness_endpoint=args.liveness,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
