"""The API's resolver: Powertools' REST resolver (its routes, exception handlers, responses and OpenAPI
document), with a route called straight with the arguments its plan validated (api/validation.py).

Powertools calls a route through a chain of middleware frames, rebuilt as text for its debug trace on
every request, each frame inspecting its callable for injected parameters; and its response builder reads
every header of the request into a case-insensitive dict to learn whether the client takes gzip, whether or
not the route compresses. The API has one step before its routes, the validation, and no route compresses.
So here a request finds its route among those of its method that may match its path's first two segments
(Powertools tries every route's expression in turn), runs the route's plan, calls the route with
the values, and answers through the same exception handlers and the same response builder, which looks at
``Accept-Encoding`` only for a route or an answer that asks for compression. A middleware added to the
resolver, to a router it includes or to a route, or Powertools' debug mode, takes Powertools' own chain again
(with the validation as its first middleware).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.api_gateway import ResponseBuilder

from .validation import planned, validate_request

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.api_gateway import Route
    from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent


class _ResponseBuilder(ResponseBuilder):  # type: ignore[type-arg]
    @staticmethod
    def _has_compression_enabled(route_compression: bool, response_compression: bool | None,
                                 event: BaseProxyEvent) -> bool:
        # compression needs the route's or the answer's asking for it (and then a client taking gzip)
        if not route_compression and not response_compression:
            return False
        return bool(ResponseBuilder._has_compression_enabled(route_compression, response_compression, event))


# what a route's rule cannot spell out literally in its first two segments (a parameter, or a character its
# regular expression reads otherwise: Powertools puts the rule's text into the expression as it is)
_NOT_LITERAL = frozenset("<>.^$*+?{}[]\\|()")

SegmentKey = tuple[str, str]


def segment_key(path: str) -> SegmentKey | None:
    """A path's first two segments (``/v1/memories/kb/...`` -> ``("v1", "memories")``); None when it has fewer."""
    parts = path.split("/", 3)
    return (parts[1], parts[2]) if len(parts) > 2 and not parts[0] else None


def _rule_key(rule: str) -> SegmentKey | None:
    """The first two segments of every path a rule matches, when the rule spells both out (its expression is
    ``^`` + the rule + ``/*$``, a parameter matching within one segment); None: a candidate for any path."""
    key = segment_key(rule)
    if key is None or _NOT_LITERAL.intersection(key[0] + key[1]):
        return None
    return key


class ApiResolver(APIGatewayRestResolver):
    """``APIGatewayRestResolver`` whose routes are called with their validated arguments, in one step."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._response_builder_class = _ResponseBuilder
        # by method, then by a path's first two segments: the routes that may match it, in Powertools' order
        self._candidates: dict[str, dict[SegmentKey | None, list[Route]]] = {}
        self._routes_seen = -1  # how many routes _candidates was made from
        self._routed: frozenset[Route] = frozenset()  # the routes added (Powertools' not-found answer is not one)

    def _routes_of(self, method: str, path: str) -> list[Route]:
        """The routes of ``method`` that may match ``path``, in the order Powertools tries them: those whose
        rule's first two segments are other than the path's cannot match it, so they are not tried."""
        if len(self._static_routes) + len(self._dynamic_routes) != self._routes_seen:  # (added, never removed)
            self._plan_candidates()
        table = self._candidates.get(method)
        if table is None:
            return []
        return table.get(segment_key(path)) or table[None]

    def _plan_candidates(self) -> None:
        routes = self._static_routes + self._dynamic_routes
        by_method: dict[str, list[tuple[Route, SegmentKey | None]]] = {}
        for route in routes:
            by_method.setdefault(route.method, []).append((route, _rule_key(route.path)))
        self._candidates = {}
        for method, keyed in by_method.items():
            table: dict[SegmentKey | None, list[Route]] = {None: [route for route, key in keyed if key is None]}
            for wanted in {key for _, key in keyed if key is not None}:
                table[wanted] = [route for route, key in keyed if key is None or key == wanted]
            self._candidates[method] = table
        self._routed = frozenset(routes)
        self._routes_seen = len(routes)

    def _resolve(self) -> ResponseBuilder:  # type: ignore[type-arg]
        method = self.current_event.http_method.upper()
        path = self._remove_prefix(self.current_event.path)
        for route in self._routes_of(method, path):  # in the order Powertools tries them
            match = route.rule.match(path)
            if match:
                self.append_context(_route=route, _path=path)
                return self._call_route(route, match.groupdict())
        return self._handle_not_found(method=method, path=path)

    def _call_route(self, route: Route, route_arguments: dict[str, str]) -> ResponseBuilder:  # type: ignore[type-arg]
        if self._router_middlewares or route.middlewares or self._debug:  # (a router's too, once included)
            if validate_request not in self._router_middlewares:
                self._router_middlewares = [validate_request, *self._router_middlewares]
            return super()._call_route(route, route_arguments)
        try:
            # the not-found answer (a 404, or a 405 naming the methods a path serves) takes no arguments, and
            # answers whatever the query holds: the query is a route's to refuse, and none was found
            arguments = planned(route).values(self.current_event, route_arguments) if route in self._routed else {}
            self.append_context(_route_args=arguments)
            response = self._to_response(route.func(**arguments))
            return self._response_builder_class(response=response, serializer=self._serializer,  # type: ignore[arg-type]
                                                route=route)
        except Exception as error:
            handled = self._call_exception_handler(error, route)
            if handled is not None:
                return handled
            raise
