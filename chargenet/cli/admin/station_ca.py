"""`chargenet admin station-ca ...`: a company's station CA, kept in the keys folder (decisions.md "Security
profiles")."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from chargenet.cli.admin import NOUNS
from chargenet.cli.common import add_verb, emit, in_read, in_transaction, read_input_file

if TYPE_CHECKING:
    from chargenet.services.station_ca import StationCaView


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("station-ca", help=NOUNS["station-ca"][1])
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)
    create = add_verb(verbs, "create", "make the company's station CA (P-256, ten years)", _create)
    create.add_argument("--company", required=True, dest="company_id", metavar="ID")
    imported = add_verb(verbs, "import", "bring the company's own station CA (replaces the current one)", _import)
    imported.add_argument("--company", required=True, dest="company_id", metavar="ID")
    imported.add_argument("--cert", required=True, dest="cert_file", metavar="FILE", help="the CA certificate (PEM)")
    imported.add_argument("--key-file", required=True, dest="key_file", metavar="FILE", help="its key (PEM)")
    upstream = add_verb(
        verbs,
        "import-upstream",
        "trust the CA of a site's upstream, to which the site relays its CSRs",
        _import_upstream,
    )
    upstream.add_argument("--site", required=True, dest="site_id", metavar="ID")
    upstream.add_argument("--cert", required=True, dest="cert_file", metavar="FILE", help="the CA certificate (PEM)")
    shown = add_verb(verbs, "show", "the company's station CA: subject, expiry, fingerprint", _show)
    shown.add_argument("--company", required=True, dest="company_id", metavar="ID")


def _emit(args: argparse.Namespace, ca: StationCaView, verb: str) -> None:
    human = f"{verb} station CA of {ca.company_id}: {ca.subject}, expires {ca.not_after.isoformat()}, {ca.fingerprint}"
    data = {
        "companyId": ca.company_id,
        "subject": ca.subject,
        "notAfter": ca.not_after.isoformat(),
        "fingerprint": ca.fingerprint,
        "certificate": ca.certificate,
    }
    emit(args, data, human)


def _create(args: argparse.Namespace) -> None:
    from chargenet.services import station_ca
    from chargenet.services.callers import OPERATOR

    ca = in_transaction(
        args,
        lambda ctx, s: station_ca.create_ca(s, OPERATOR, ctx.keys, company_id=args.company_id, now=ctx.clock.now()),
    )
    _emit(args, ca, "created")


def _import_upstream(args: argparse.Namespace) -> None:
    from chargenet.services import station_ca
    from chargenet.services.callers import OPERATOR

    certificate = read_input_file(args.cert_file).encode()
    ca = in_transaction(
        args,
        lambda ctx, s: station_ca.import_upstream_ca(
            s, OPERATOR, ctx.keys, site_id=args.site_id, certificate_pem=certificate, now=ctx.clock.now()
        ),
    )
    _emit(args, ca, f"imported for site {args.site_id} the upstream")


def _import(args: argparse.Namespace) -> None:
    from chargenet.services import station_ca
    from chargenet.services.callers import OPERATOR

    certificate, key = read_input_file(args.cert_file).encode(), read_input_file(args.key_file).encode()
    ca = in_transaction(
        args,
        lambda ctx, s: station_ca.import_ca(
            s,
            OPERATOR,
            ctx.keys,
            company_id=args.company_id,
            certificate_pem=certificate,
            key_pem=key,
            now=ctx.clock.now(),
        ),
    )
    _emit(args, ca, "imported")


def _show(args: argparse.Namespace) -> None:
    from chargenet.services import station_ca
    from chargenet.services.callers import OPERATOR

    ca = in_read(args, lambda ctx, s: station_ca.get_ca(s, OPERATOR, ctx.keys, company_id=args.company_id))
    _emit(args, ca, "the")
