"""`chargenet admin localauth add|list|remove`: a site's local authorization list."""

from __future__ import annotations

import argparse

from chargenet.cli.admin import NOUNS
from chargenet.cli.common import add_verb, emit, emit_views, in_transaction, instant, read_every_item

# The statuses a tag of the list may have (`services.localauth.LISTABLE_STATUSES`, which the use case checks), written
# out so that building the parser imports no use case; a test holds the two equal.
STATUSES = ["Accepted", "Blocked", "Expired", "Invalid"]
# `services.localauth.ID_TOKEN_TYPES` (OCPP 2.0.1's IdTokenEnumType), written out for the same reason.
ID_TOKEN_TYPES = ["Central", "eMAID", "ISO14443", "ISO15693", "KeyCode", "Local", "MacAddress", "NoAuthorization"]


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("localauth", help=NOUNS["localauth"][1])
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)

    add = add_verb(verbs, "add", "add or change a tag", _add)
    add.add_argument("--site", required=True, dest="site_id", metavar="ID")
    add.add_argument("id_tag", metavar="ID_TAG", help="up to 36 characters; one over 20 reaches 2.0.1 stations only")
    add.add_argument("--status", default="Accepted", choices=STATUSES)
    add.add_argument(
        "--type", dest="id_token_type", default="ISO14443", choices=ID_TOKEN_TYPES, help="as 2.0.1 stations are told"
    )
    add.add_argument("--expires", type=instant, metavar="ISO", help="expiry, ISO 8601 with offset")
    add.add_argument("--parent", dest="parent_id_tag", metavar="ID_TAG")

    add_verb(verbs, "list", "list a site's tags", _list).add_argument(
        "--site", required=True, dest="site_id", metavar="ID"
    )

    remove = add_verb(verbs, "remove", "remove a tag", _remove)
    remove.add_argument("--site", required=True, dest="site_id", metavar="ID")
    remove.add_argument("id_tag", metavar="ID_TAG")


def _add(args: argparse.Namespace) -> None:
    from chargenet.services import localauth
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    entry = in_transaction(
        args,
        lambda ctx, session: localauth.add_entry(
            session,
            OPERATOR,
            site_id=args.site_id,
            id_tag=args.id_tag,
            now=ctx.clock.now(),
            status=args.status,
            expires_at=args.expires,
            parent_id_tag=args.parent_id_tag,
            id_token_type=args.id_token_type,
        ),
    )
    emit(args, rendered(entry), f"{entry.id_tag} is {entry.status} at site {entry.site_id}")


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import localauth
    from chargenet.services.callers import OPERATOR

    items = read_every_item(
        args,
        lambda s, page: localauth.list_entries(s, OPERATOR, page, site_id=args.site_id),
    )
    emit_views(args, items, ["idTag", "idTokenType", "status", "expiresAt"])


def _remove(args: argparse.Namespace) -> None:
    from chargenet.services import localauth
    from chargenet.services.callers import OPERATOR

    in_transaction(
        args,
        lambda ctx, session: localauth.remove_entry(
            session, OPERATOR, site_id=args.site_id, id_tag=args.id_tag, now=ctx.clock.now()
        ),
    )
    emit(args, {"siteId": args.site_id, "idTag": args.id_tag, "removed": True}, f"removed {args.id_tag}")
