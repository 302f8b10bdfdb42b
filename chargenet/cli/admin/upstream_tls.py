"""`chargenet admin site upstream-tls ...`: the security profile of a site's link to its upstream, the client
certificate the edge shows it and the CA bundle its server certificate is checked against (domain.upstream_profiles;
the files are kept in the keys folder)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from chargenet.cli.common import add_verb, emit, in_read, in_transaction, read_input_file

if TYPE_CHECKING:
    from chargenet.services.upstream_tls import UpstreamTlsView

PROFILE_HELP = (
    "1: Basic over ws:// or wss:// (the default); 2: Basic over wss:// only; 3: wss:// with the client certificate"
)


def register(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = verbs.add_parser("upstream-tls", help="the TLS of the site's link to its upstream")
    tls_verbs = noun.add_subparsers(dest="tls_verb", metavar="VERB", required=True)
    change = add_verb(tls_verbs, "set", "set the profile, the client certificate or the CA bundle", _set)
    change.add_argument("site_id", metavar="SITE_ID")
    change.add_argument("--profile", type=int, choices=(1, 2, 3), help=PROFILE_HELP)
    change.add_argument("--client-cert", dest="client_cert", metavar="FILE", help="certificate the edge shows (PEM)")
    change.add_argument("--client-key", dest="client_key", metavar="FILE", help="its private key (unencrypted PEM)")
    change.add_argument("--ca-bundle", dest="ca_bundle", metavar="FILE", help="CAs of the upstream's certificate")
    add_verb(tls_verbs, "show", "the profile, client certificate and CA bundle", _show).add_argument(
        "site_id", metavar="SITE_ID"
    )
    add_verb(tls_verbs, "clear", "back to profile 1 and the system's CAs; the files are deleted", _clear).add_argument(
        "site_id", metavar="SITE_ID"
    )


def _emit(args: argparse.Namespace, tls: UpstreamTlsView, verb: str) -> None:
    from chargenet.services.views import rendered

    certificate = tls.client_certificate
    shown = "no client certificate"
    if certificate is not None:
        shown = f"client certificate {certificate.subject}, expires {certificate.not_after.isoformat()}"
    count = tls.ca_bundle_certificates
    bundle = "the system's CAs" if count is None else f"a CA bundle of {count} certificate{'' if count == 1 else 's'}"
    human = f"{verb} upstream TLS of {tls.site_id}: profile {tls.security_profile}, {shown}, {bundle}"
    emit(args, rendered(tls), human)


def _set(args: argparse.Namespace) -> None:
    from chargenet.services import upstream_tls
    from chargenet.services.callers import OPERATOR

    certificate = read_input_file(args.client_cert).encode() if args.client_cert else None
    key = read_input_file(args.client_key).encode() if args.client_key else None
    bundle = read_input_file(args.ca_bundle).encode() if args.ca_bundle else None
    tls = in_transaction(
        args,
        lambda ctx, s: upstream_tls.set_upstream_tls(
            s,
            OPERATOR,
            ctx.keys,
            args.site_id,
            now=ctx.clock.now(),
            profile=args.profile,
            client_certificate_pem=certificate,
            client_key_pem=key,
            ca_bundle_pem=bundle,
        ),
    )
    _emit(args, tls, "set")


def _show(args: argparse.Namespace) -> None:
    from chargenet.services import upstream_tls
    from chargenet.services.callers import OPERATOR

    _emit(args, in_read(args, lambda ctx, s: upstream_tls.get_upstream_tls(s, OPERATOR, args.site_id)), "the")


def _clear(args: argparse.Namespace) -> None:
    from chargenet.services import upstream_tls
    from chargenet.services.callers import OPERATOR

    tls = in_transaction(
        args,
        lambda ctx, s: upstream_tls.clear_upstream_tls(s, OPERATOR, ctx.keys, args.site_id, now=ctx.clock.now()),
    )
    _emit(args, tls, "cleared")
