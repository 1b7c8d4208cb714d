"""``solvi serve``: load a target's System and serve it with uvicorn, from argparse or code."""

from __future__ import annotations

import argparse
import errno
import math
import os
import socket
import sys
from collections.abc import Sequence

from solvi._targets import TARGET_HELP, TargetError, load_system
from solvi.errors import SolviError
from solvi.serve._app import INSTALL, asgi, need

__all__ = ["ListenError", "add_serve_command", "check_listen", "load_system", "main", "run"]


class ListenError(SolviError):
    """The server cannot listen where it was told to (a port in use, a host not of this machine)."""


def _listen_fix(exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return "stop what listens there, or give another --port"
    if exc.errno == errno.EACCES:
        return "give a --port above 1023, or run with the rights to bind it"
    return "give --host an address of this machine (127.0.0.1, 0.0.0.0 or ::)"


def _cannot_listen(host: str, port: int, exc: OSError) -> ListenError:
    reason = (exc.strerror or str(exc)).lower()
    return ListenError(f"cannot listen on {host}:{port}: {reason}; {_listen_fix(exc)}")


def check_listen(host: str, port: int) -> None:
    """Bind `host`:`port` once and let go, as uvicorn is about to, to fail in one line.

    uvicorn reports a port in use or an unknown host after its startup log and
    exits 3; binding first (with the same SO_REUSEADDR and IPV6_V6ONLY as
    asyncio's server) says what is wrong before anything starts. Another
    process can still take the port in between; uvicorn then reports it.

    Raises:
        ListenError: the address cannot be resolved or bound.
    """
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise _cannot_listen(host, port, exc) from exc
    for family, kind, proto, _, address in found:
        with socket.socket(family, kind, proto) as sock:
            if os.name == "posix":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                raise _cannot_listen(host, port, exc) from exc


def run(
    target: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    max_body: int = 1_000_000,
    max_keys: int = 1_000,
    read_timeout: float = 10.0,
    allow_overrides: bool = False,
    log_level: str = "info",
    aliases: bool = False,
    shutdown_timeout: float = 30.0,
) -> None:
    """Serve the System named by `target` with uvicorn until interrupted.

    uvicorn runs its h11 protocol with a deadline for each request's line and
    headers (`read_timeout` seconds, 408 after it); the app bounds the body
    by the same time.

    Args:
        target: ``module:attribute`` or ``path/to/file.py:attribute`` naming a
            System, a Catalog, or a function without arguments returning one.
        host: the address to listen on (default loopback only).
        port: the TCP port.
        max_body: the largest request body accepted, in bytes.
        max_keys: the most keys a request may have.
        read_timeout: seconds a client has to send a request's headers, and
            again its body.
        allow_overrides: accept any key the System accepts, not only the
            catalog's inputs.
        log_level: uvicorn's log level.
        aliases: read keys written in other conventions (``monthlyIncome``, a
            synonym the catalog declares) as the inputs they name (experimental).
        shutdown_timeout: seconds a stopping server (SIGTERM, Ctrl-C) waits for the
            requests in flight; those still running then are cancelled, which closes
            them as cancelled in the journal, before the System is closed.

    Raises:
        ImportError: Starlette or uvicorn is not installed.
        SolviError: the target cannot be loaded.
        ListenError: `host`:`port` cannot be listened on (in use, not an address here).
        ValueError: a limit is not a positive number.
    """
    uvicorn = need("uvicorn")
    # The command loaded the System, so the app closes it when the server stops: what
    # it learned since its last save is saved, and its journal closed.
    app = asgi(
        load_system(target),
        close_system=True,
        max_body=max_body,
        max_keys=max_keys,
        read_timeout=read_timeout,
        allow_overrides=allow_overrides,
        aliases=aliases,
    )
    from solvi.serve._protocol import header_deadline_protocol

    protocol = header_deadline_protocol(read_timeout)
    check_listen(host, port)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=protocol,
        timeout_graceful_shutdown=shutdown_timeout,
    )


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        msg = f"a port is a whole number from 0 to 65535, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        msg = f"give a positive whole number, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        msg = f"give a positive number of seconds (e.g. 2.5), got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help=TARGET_HELP)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8000, help="TCP port (8000)")
    parser.add_argument(
        "--max-body",
        type=_positive,
        default=1_000_000,
        help="largest request body accepted, in bytes (1000000)",
    )
    parser.add_argument(
        "--max-keys",
        type=_positive,
        default=1_000,
        help="most keys a request's state (or a plan's keys=) may have (1000)",
    )
    parser.add_argument(
        "--read-timeout",
        type=_seconds,
        default=10.0,
        help="seconds a client has to send a request's headers, and again its body (10)",
    )
    parser.add_argument(
        "--shutdown-timeout",
        type=_seconds,
        default=30.0,
        help=(
            "seconds a stopping server waits for requests in flight before it cancels "
            "them, closing them as cancelled in the journal (30)"
        ),
    )
    parser.add_argument(
        "--allow-overrides",
        action="store_true",
        help=(
            "accept any key the System accepts (hard checks and the facts they read only "
            "where its overrides= names them), not only the catalog's inputs"
        ),
    )
    parser.add_argument(
        "--aliases",
        action="store_true",
        help=(
            "read keys written in other conventions (monthlyIncome, monthly-income, a synonym "
            "the catalog declares) as the inputs they name; experimental"
        ),
    )
    parser.add_argument(
        "--log-level",
        choices=["critical", "error", "warning", "info", "debug", "trace"],
        default="info",
        help="uvicorn's log level (info: one line per request)",
    )
    parser.set_defaults(run=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        run(
            args.target,
            args.host,
            args.port,
            max_body=args.max_body,
            max_keys=args.max_keys,
            read_timeout=args.read_timeout,
            allow_overrides=args.allow_overrides,
            log_level=args.log_level,
            aliases=args.aliases,
            shutdown_timeout=args.shutdown_timeout,
        )
    except TargetError as exc:
        sys.stderr.write(f"solvi serve: {exc}\n")
        return 1 if exc.catalog_mistake else 2
    except (SolviError, ImportError) as exc:
        sys.stderr.write(f"solvi serve: {exc}\n")
        return 2
    return 0


def add_serve_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Register ``serve TARGET [--host] [--port] [--max-body] [--max-keys] [--read-timeout]
    [--shutdown-timeout] [--allow-overrides] [--aliases]`` on an argparse subparsers object.

    The sub-command sets ``run`` to a function taking the parsed arguments and
    returning the exit status (1 when building the target's System fails on a
    catalog mistake; 2 when the target cannot be loaded or the serve extra is
    missing).

    Returns:
        The ``serve`` parser.
    """
    parser = subparsers.add_parser(
        "serve",
        help="serve a System over HTTP (POST /v1/ask, plan, health, metrics)",
        description=(
            "Serve a System over HTTP with uvicorn: POST /v1/ask, GET /v1/plan, GET /healthz, "
            f"GET /metrics, GET /openapi.json. Needs the serve extra: {INSTALL}"
        ),
    )
    _add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``solvi serve`` on its own (what ``python -m solvi.serve`` runs).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(prog="solvi serve", description="Serve a System over HTTP.")
    _add_arguments(parser)
    args = parser.parse_args(argv)
    status: int = args.run(args)
    return status
