"""`chargenet admin station certificates|install-certificate|delete-certificate|installed-certificates|request-csr`
and `chargenet admin site station-csrs`: a station's certificates, as the API has them
(`services.station_certificates`).

The commands travel to the station through the store like every station command (`chargenet.edge.relay`); the
answer is printed as the station gave it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chargenet.cli.common import add_verb, emit, emit_views, run_with_context
from chargenet.domain.certificate_commands import ROOT_TYPES

if TYPE_CHECKING:
    from chargenet.context import AppContext
    from chargenet.edge.ocpp16.frames import Payload
    from chargenet.ports import StationCommands


def register_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the certificate verbs to `admin station`."""

    def verb(name: str, text: str, run: Callable[[argparse.Namespace], None]) -> argparse.ArgumentParser:
        parser = add_verb(verbs, name, text, run)
        parser.add_argument("station_id", metavar="STATION_ID")
        return parser

    verb("certificates", "list the certificates signed for a station, with their expiry", _list)
    install = verb("install-certificate", "install a CA certificate on a station", _install)
    install.add_argument("--type", dest="certificate_type", required=True, choices=ROOT_TYPES)
    install.add_argument("--cert", dest="certificate", required=True, metavar="FILE", help="a PEM CA certificate")
    delete = verb("delete-certificate", "delete a certificate from a station", _delete)
    delete.add_argument("--hash-algorithm", dest="hash_algorithm", choices=["SHA256", "SHA384", "SHA512"])
    delete.add_argument("--issuer-name-hash", dest="issuer_name_hash", required=True, metavar="HEX")
    delete.add_argument("--issuer-key-hash", dest="issuer_key_hash", required=True, metavar="HEX")
    delete.add_argument("--serial", dest="serial_number", required=True, metavar="HEX")
    installed = verb("installed-certificates", "ask a station which CA certificates it has", _installed)
    installed.add_argument("--type", dest="certificate_type", required=True, choices=ROOT_TYPES)
    verb("request-csr", "ask a station for a new CSR (it then renews its certificate)", _request_csr)


def register_site_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `station-csrs` to `admin site`."""
    handling = add_verb(verbs, "station-csrs", "who signs the site's stations' CSRs", _station_csrs)
    handling.add_argument("site_id", metavar="SITE_ID")
    handling.add_argument("handling", choices=["sign", "relay"], help="sign: the station CA; relay: the upstream")


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import station_certificates
    from chargenet.services.callers import OPERATOR

    async def run(context: AppContext) -> station_certificates.StationCertificates:
        async with context.store.read() as session:
            return await station_certificates.list_certificates(session, OPERATOR, args.station_id)

    emit_views(args, run_with_context(args, run).items, ["serial", "subject", "not_after", "issued_at"])


def _command(
    args: argparse.Namespace, action: str, send: Callable[[AppContext, StationCommands], Awaitable[Payload]]
) -> None:
    from chargenet.edge.ocpp16 import frames
    from chargenet.edge.relay import RelayedCommands

    async def run(context: AppContext) -> Payload:
        return await send(context, RelayedCommands(context.store, context.clock))

    answer: dict[str, Any] = json.loads(frames.dump_payload(run_with_context(args, run)))
    lines = [f"  {key}: {value if isinstance(value, str) else json.dumps(value)}" for key, value in answer.items()]
    emit(args, answer, "\n".join([f"{args.station_id} answered {action}:", *lines]))


def _install(args: argparse.Namespace) -> None:
    from chargenet.services import station_certificates
    from chargenet.services.callers import OPERATOR

    pem = Path(args.certificate).read_text(encoding="utf-8", errors="replace")

    async def send(context: AppContext, edge: StationCommands) -> Payload:
        return await station_certificates.install_certificate(
            context.store.read,
            context.store.transaction,
            edge,
            OPERATOR,
            station_id=args.station_id,
            certificate_type=args.certificate_type,
            certificate_pem=pem,
            now=context.clock.now(),
        )

    _command(args, "InstallCertificate", send)


def _delete(args: argparse.Namespace) -> None:
    from chargenet.services import station_certificates
    from chargenet.services.callers import OPERATOR

    hash_data = {
        "hashAlgorithm": args.hash_algorithm or "SHA256",
        "issuerNameHash": args.issuer_name_hash,
        "issuerKeyHash": args.issuer_key_hash,
        "serialNumber": args.serial_number,
    }

    async def send(context: AppContext, edge: StationCommands) -> Payload:
        return await station_certificates.delete_certificate(
            context.store.read,
            context.store.transaction,
            edge,
            OPERATOR,
            station_id=args.station_id,
            hash_data=hash_data,
            now=context.clock.now(),
        )

    _command(args, "DeleteCertificate", send)


def _installed(args: argparse.Namespace) -> None:
    from chargenet.services import station_certificates
    from chargenet.services.callers import OPERATOR

    async def send(context: AppContext, edge: StationCommands) -> Payload:
        return await station_certificates.installed_certificate_ids(
            context.store.read, edge, OPERATOR, station_id=args.station_id, certificate_type=args.certificate_type
        )

    _command(args, "GetInstalledCertificateIds", send)


def _request_csr(args: argparse.Namespace) -> None:
    from chargenet.services import station_certificates
    from chargenet.services.callers import OPERATOR

    async def send(context: AppContext, edge: StationCommands) -> Payload:
        return await station_certificates.request_csr(context.store.read, edge, OPERATOR, station_id=args.station_id)

    _command(args, "a CSR request", send)


def _station_csrs(args: argparse.Namespace) -> None:
    from chargenet.services import station_certificates
    from chargenet.services.callers import OPERATOR

    async def run(context: AppContext) -> str:
        async with context.store.transaction() as session:
            return await station_certificates.set_csr_handling(
                session, OPERATOR, site_id=args.site_id, handling=args.handling, now=context.clock.now()
            )

    handling = run_with_context(args, run)
    emit(args, {"site_id": args.site_id, "station_csrs": handling}, f"site {args.site_id}: station CSRs {handling}")
