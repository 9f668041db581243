"""What a route asks FastAPI for: the server's :class:`Service`, the caller, the token book.

:func:`attach` puts the service and the tokens on ``app.state`` once, when the app is built;
routes declare ``service: ServiceDep`` and ``principal: PrincipalDep`` rather than closing
over them in a factory. The providers are ``async``, so FastAPI calls them on the event loop
instead of sending each to a thread.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI
from starlette.requests import HTTPConnection

from knowhub.app import App
from knowhub.caller import Caller
from knowhub.interfaces.http.service import Service, principal_of
from knowhub.interfaces.security import TokenBook

__all__ = [
    "DoorDep",
    "PrincipalDep",
    "ServiceDep",
    "TokensDep",
    "attach",
    "service_of",
    "writer",
]


def attach(api: FastAPI, service: Service, tokens: TokenBook) -> None:
    """Make ``service`` and ``tokens`` what the routes of ``api`` are given."""
    api.state.service = service
    api.state.tokens = tokens


def service_of(connection: HTTPConnection) -> Service:
    """The service of the app serving ``connection`` (error handlers use it too)."""
    service: Service = connection.app.state.service
    return service


async def _service(connection: HTTPConnection) -> Service:
    return service_of(connection)


async def _principal(connection: HTTPConnection) -> Caller:
    return principal_of(connection)


async def _door(connection: HTTPConnection) -> App:
    return service_of(connection).app_for(principal_of(connection))


async def _tokens(connection: HTTPConnection) -> TokenBook:
    tokens: TokenBook = connection.app.state.tokens
    return tokens


ServiceDep = Annotated[Service, Depends(_service)]
PrincipalDep = Annotated[Caller, Depends(_principal)]
DoorDep = Annotated[App, Depends(_door)]
"""The App as the request's caller may use it (``App.for_caller``): the door its
collections' handles open from (``door.collection(name)``), refusing what it may not read."""
TokensDep = Annotated[TokenBook, Depends(_tokens)]


def writer(what: str) -> Any:
    """What a route that changes the knowledge base (``what`` it does, for the refusal)
    declares for its caller: a read-only one is refused here (403), before the route runs;
    the collection handle refuses its own changes too."""

    async def caller(connection: HTTPConnection) -> Caller:
        found = principal_of(connection)
        found.check_write(what)
        return found

    return Depends(caller)
