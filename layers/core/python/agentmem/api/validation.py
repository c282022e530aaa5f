"""Request validation: a route's path, query, header and body values checked against its signature, the
signature read once per route.

A route says what it takes in its signature (path segments, ``Query`` and ``Header`` parameters, a
``Body`` model); Powertools reads the same signature to write the OpenAPI document (``Route.dependant``).
The first request a route serves turns that reading into a plan: for each parameter, where its value is,
its name as sent, whether it takes many values, its default, and pydantic's validator of its type. Every
request then only runs the plan: one pydantic validation per value sent, nothing inspected again, and the
answer is not validated a second time (the presenters build it). A complaint is a ``RequestValidationError``
in pydantic's shape, the first one being what the handler's 400 names.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin
from weakref import WeakKeyDictionary

from aws_lambda_powertools.event_handler.openapi.exceptions import RequestUnsupportedContentType, RequestValidationError

from .json_body import declared_content_type, lone_surrogate

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import Response
    from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver, Route
    from aws_lambda_powertools.event_handler.openapi.compat import ModelField
    from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent

_MISSING = object()


@dataclass(frozen=True, slots=True)
class _Parameter:
    name: str  # the route function's argument
    alias: str  # as the request sends it
    where: str  # path, query or header
    many: bool  # takes a list of values
    required: bool
    field: ModelField
    fixed_default: Any = _MISSING  # a default that is one immutable value (most are None), taken as it is

    def default(self) -> Any:
        return self.field.get_default() if self.fixed_default is _MISSING else self.fixed_default


@dataclass(frozen=True, slots=True)
class _Body:
    name: str
    required: bool
    field: ModelField


@dataclass(frozen=True, slots=True)
class Plan:
    """What one route's requests are checked against."""

    parameters: tuple[_Parameter, ...]
    body: _Body | None
    query_names: frozenset[str] = frozenset()  # every query parameter the route takes, as sent

    def values(self, event: BaseProxyEvent, path_values: Mapping[str, str]) -> dict[str, Any]:
        """The route function's arguments, validated; raises ``RequestValidationError`` at the first complaint,
        the first being a query parameter the route does not take (``usr=`` for ``user=`` must not save into
        the account layer as if no user were named)."""
        values: dict[str, Any] = {}
        query = _query(event)
        if query:
            _refuse_unknown(query, self.query_names)
        headers: Mapping[str, Any] | None = None
        for parameter in self.parameters:
            if parameter.where == "path":
                sent: Any = path_values.get(parameter.alias)
            elif parameter.where == "query":
                sent = _one_or_many(query.get(parameter.alias), parameter.many)
            else:
                headers = _headers(event) if headers is None else headers
                sent = _one_or_many(headers.get(parameter.alias.lower()), parameter.many)
            loc = (parameter.where, parameter.alias)
            values[parameter.name] = _validated(parameter.field, sent, parameter.required, loc, parameter.default)
        if self.body is not None:
            sent = _json_body(event)
            body = self.body
            values[body.name] = _validated(body.field, sent, body.required, ("body",), body.field.get_default)
        return values


def _validated(field: ModelField, sent: Any, required: bool, loc: tuple[str, ...],
               default: Callable[[], Any]) -> Any:
    if sent is None:
        if required:
            raise RequestValidationError([{"type": "missing", "loc": loc, "msg": "Field required", "input": None}])
        return default()
    _check_text(sent, loc)
    value, errors = field.validate(value=sent, loc=loc)
    if errors:
        raise RequestValidationError(errors if isinstance(errors, list) else [errors])
    return value


def _refuse_unknown(query: Mapping[str, Any], known: frozenset[str]) -> None:
    unknown = sorted(name for name in query if name not in known)
    if unknown:
        raise RequestValidationError([{
            "type": "unknown_query_parameter", "loc": ("query", unknown[0]), "input": unknown[0],
            "msg": "unknown query parameter", "ctx": {"known": sorted(known)},
        }])


def _check_text(sent: Any, loc: tuple[str, ...]) -> None:
    """A path, query or header value must be Unicode text: one that is not (percent-escapes of bytes that are not
    UTF-8, which the local server reads as lone surrogates, or a lone surrogate itself) is refused naming it,
    before any code tries to encode it (a store, a log line, the search's tokenizer)."""
    for value in sent if isinstance(sent, list) else (sent,):
        escape = lone_surrogate(value) if isinstance(value, str) else None
        if escape is not None:
            raise RequestValidationError([{
                "type": "string_not_unicode", "loc": loc, "input": None,
                "msg": f"the value is not UTF-8 text ({escape}: a byte that is not UTF-8, or half of a surrogate "
                       "pair)",
            }])


def _query(event: BaseProxyEvent) -> Mapping[str, Any]:
    """Each query parameter's values as sent (API Gateway gives them as lists too; a REST event has both)."""
    many = event.get("multiValueQueryStringParameters")
    if many:
        return many  # type: ignore[no-any-return]
    return {name: [value] for name, value in (event.get("queryStringParameters") or {}).items()}


def _headers(event: BaseProxyEvent) -> Mapping[str, Any]:
    many = event.get("multiValueHeaders")
    if many:
        return {name.lower(): values for name, values in many.items()}
    return {name.lower(): [value] for name, value in (event.get("headers") or {}).items()}


def _one_or_many(values: Any, many: bool) -> Any:
    """A list for a parameter that takes many; the one value for one that takes one (several: the list, which
    its validator refuses)."""
    if values is None or many or not isinstance(values, list):
        return values
    return values[0] if len(values) == 1 else values


def _json_body(event: BaseProxyEvent) -> Any:
    """The body, read as JSON (the handler has screened and read it already; this takes that reading)."""
    content_type = declared_content_type(event.raw_event)
    if content_type and not content_type.startswith("application/json"):
        raise RequestUnsupportedContentType("Unsupported content type", errors=[{
            "type": "unsupported_content_type", "loc": ("body",), "msg": f"Unsupported content type: {content_type}",
        }])
    try:
        return event.json_body
    except json.JSONDecodeError as error:
        raise RequestValidationError([{"type": "json_invalid", "loc": ("body", error.pos), "msg": "JSON decode error",
                                       "input": {}}]) from None


def _many(annotation: Any) -> bool:
    from aws_lambda_powertools.event_handler.openapi.compat import field_annotation_is_sequence
    from aws_lambda_powertools.event_handler.openapi.types import UnionType

    if field_annotation_is_sequence(annotation):
        return True
    return get_origin(annotation) in (Union, UnionType) and any(_many(arg) for arg in get_args(annotation))


def plan(route: Route) -> Plan:
    """The route's plan, from Powertools' reading of its signature. A kind of parameter the plan does not
    serve (a cookie, ``Depends``, a form) is refused here, when the route is first planned."""
    from aws_lambda_powertools.event_handler.openapi.params import Body, Param, ParamTypes

    dependant = route.dependant
    if dependant.cookie_params or route.has_dependencies:
        raise TypeError(f"{route.method} {route.path}: cookies and Depends() are not served by api/validation.py")
    parameters = []
    for where, fields in (("path", dependant.path_params), ("query", dependant.query_params),
                          ("header", dependant.header_params)):
        for field in fields:
            info = field.field_info
            if not isinstance(info, Param) or info.in_ != ParamTypes(where):
                raise TypeError(f"{route.method} {route.path}: {field.name} is not a {where} parameter")
            fixed = _MISSING
            if not field.required:
                default = field.get_default()
                if default is None or type(default) in (bool, int, float, str):
                    fixed = default
            parameters.append(_Parameter(name=field.name, alias=field.alias, where=where,
                                         many=_many(info.annotation), required=field.required, field=field,
                                         fixed_default=fixed))
    body = None
    if dependant.body_params:
        if len(dependant.body_params) > 1 or not isinstance(dependant.body_params[0].field_info, Body) or getattr(
            dependant.body_params[0].field_info, "embed", False
        ):
            raise TypeError(f"{route.method} {route.path}: one Body() parameter, the whole body, is served")
        field = dependant.body_params[0]
        media_type = getattr(field.field_info, "media_type", None)
        if media_type != "application/json":
            raise TypeError(f"{route.method} {route.path}: a body of {media_type} is not served")
        body = _Body(name=field.name, required=field.required, field=field)
    taken = {parameter.name for parameter in parameters} | ({body.name} if body is not None else set())
    unplanned = [name for name, parameter in inspect.signature(route.func).parameters.items()
                 if name not in taken and parameter.default is inspect.Parameter.empty]
    if unplanned:  # (a Request, which Powertools would inject)
        raise TypeError(f"{route.method} {route.path}: {', '.join(unplanned)} is not a path, query, header or body "
                        "parameter")
    query_names = frozenset(parameter.alias for parameter in parameters if parameter.where == "query")
    return Plan(parameters=tuple(parameters), body=body, query_names=query_names)


_plans: WeakKeyDictionary[Route, Plan] = WeakKeyDictionary()


def planned(route: Route) -> Plan:
    """The route's plan, made on its first request."""
    route_plan = _plans.get(route)
    if route_plan is None:
        route_plan = _plans[route] = plan(route)
    return route_plan


def validate_request(app: ApiGatewayResolver, next_middleware: Callable[[ApiGatewayResolver], Response[Any]]) -> Any:
    """The same validation as a Powertools middleware, for a resolver that calls its routes through a chain of
    them (api/resolver.py calls a route with its validated arguments itself)."""
    route: Route = app.context["_route"]
    if route not in getattr(app, "_routed", (route,)):  # the not-found answer: no route, nothing to validate
        return next_middleware(app)
    app.context["_route_args"] = planned(route).values(app.current_event, app.context["_route_args"])
    return next_middleware(app)
