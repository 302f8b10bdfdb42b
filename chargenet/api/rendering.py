"""A page's JSON from each item's JSON, each rendered once (and one item's, asked by id).

The charge point list reuses the same view object for a charge point while its rows are unchanged
(`services.charge_points`), so its JSON is rendered once per change rather than once per request: rendering a page
of 100 views was a fifth of the list's time once the page itself came from memory. The bytes are those FastAPI
renders for the same page (`test_rendering` holds them equal)."""

from __future__ import annotations

import json
from typing import Generic, TypeVar

from pydantic import BaseModel
from starlette.responses import Response

from chargenet.services.pages import Page

V = TypeVar("V", bound=BaseModel)

RENDERED_KEPT = 20_000  # views' JSON kept; past it the cache starts again


class RenderedPages(Generic[V]):
    """The JSON of pages of views, each view's part kept while the view object lives on in the service's cache."""

    def __init__(self, kept: int = RENDERED_KEPT) -> None:
        self.kept = kept
        # By the view's identity; the view is held with its JSON, so the identity is not reused while kept.
        self._rendered: dict[int, tuple[V, bytes]] = {}

    def body(self, page: Page[V]) -> bytes:
        parts = [self._json(view) for view in page.items]
        following = json.dumps(page.next).encode()
        return b'{"items":[' + b",".join(parts) + b'],"next":' + following + b"}"

    def response(self, page: Page[V]) -> Response:
        return Response(self.body(page), media_type="application/json")

    def item_response(self, view: V) -> Response:
        """One view, as the page holding it renders it (a charge point asked by id)."""
        return Response(self._json(view), media_type="application/json")

    def _json(self, view: V) -> bytes:
        known = self._rendered.get(id(view))
        if known is None or known[0] is not view:
            if len(self._rendered) >= self.kept:
                self._rendered.clear()
            known = (view, view.__pydantic_serializer__.to_json(view, by_alias=True))
            self._rendered[id(view)] = known
        return known[1]
