"""The grading page's web app (Starlette): the page, its static files and a small JSON API.

Async handlers call the store directly: the one SQLite connection stays on the event loop's
thread; each grade is one short transaction (WAL and a busy timeout let other processes write).

Safety: without a token, only loopback Host names are answered (no DNS rebinding) and a
write's Origin, when a browser names one, must be the page's own; with a token (``--host``),
every request carries it (``?token=``, then a cookie, or an ``X-Reljudge-Token`` header), else
403. Writes must be JSON, which a foreign page cannot send without a preflight; the page builds
its DOM with ``textContent``; the CSP allows only our script.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from importlib import resources
from importlib.abc import Traversable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from reljudge.assess.task import AssessTask, Given
from reljudge.errors import InputError

TOKEN_COOKIE = "reljudge_token"
TOKEN_HEADER = "x-reljudge-token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
       "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def static_dir() -> Traversable:
    """The folder of the page's HTML, CSS and JS (package data)."""
    return resources.files("reljudge.assess") / "static"


class _Guard(BaseHTTPMiddleware):
    """Token or loopback Host check on every request; security headers on every response."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint
                       ) -> Response:
        from_query = False
        if self.token is None:
            host = request.headers.get("host", "")
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if name not in LOOPBACK_NAMES:
                return PlainTextResponse("forbidden: this server answers loopback names only",
                                         status_code=403)
            origin = request.headers.get("origin")
            if request.method not in ("GET", "HEAD") and origin is not None \
                    and origin != f"{request.url.scheme}://{host}":
                return PlainTextResponse("forbidden: a write from another origin",
                                         status_code=403)
        else:
            given = request.query_params.get("token")
            from_query = given is not None
            if given is None:
                given = request.headers.get(TOKEN_HEADER) or request.cookies.get(TOKEN_COOKIE)
            if given is None or not secrets.compare_digest(given.encode(), self.token.encode()):
                return PlainTextResponse("forbidden: a valid token is required", status_code=403)
        response = await call_next(request)
        # a token from the URL: a cookie carries it on later requests
        if from_query and self.token is not None:
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response


def create_app(task: AssessTask, *, token: str | None = None,
               on_stop: Callable[[], None] | None = None) -> Starlette:
    """The Starlette app that serves one task to one annotator; ``on_stop`` is called when
    the page asks the server to stop (the finished page's button)."""
    llm = task.llm_grades()

    def state(given: dict[int, Given]) -> dict:
        return {"grades": {str(i): g.grade for i, g in given.items()},
                "notes": {str(i): g.note for i, g in given.items() if g.note}}

    async def page(request: Request) -> Response:
        return FileResponse(str(static_dir() / "index.html"), media_type="text/html")

    async def get_state(request: Request) -> Response:
        return JSONResponse({
            "title": task.name, "annotator": task.annotator, "total": len(task.items),
            "scale": [{"grade": s.grade, "name": s.name, "text": s.text} for s in task.scale],
            "items": [{"qid": it.qid, "docid": it.docid} for it in task.items],
            "llm": bool(llm), "adjudicating": task.adjudicating, "source": task.source,
            "stoppable": on_stop is not None, **state(task.given())})

    async def get_item(request: Request) -> Response:
        try:
            index = int(request.path_params["index"])
            item = task.items[index] if index >= 0 else None
        except (ValueError, IndexError):
            item = None
        if item is None:
            return JSONResponse({"error": "no such pair"}, status_code=404)
        return JSONResponse({"index": item.index, "qid": item.qid, "docid": item.docid,
                             "query": item.query, "narrative": item.narrative,
                             "passage": item.passage, "title": item.title,
                             "llm": [{"source": s, "grade": g} for s, g in llm.get(index, [])],
                             "settle": [{"source": g.source, "kind": g.kind, "grade": g.grade,
                                         "note": g.meta.get("note", ""),
                                         "reasoning": g.raw if g.kind == "llm" else None}
                                        for g in task.settles.get((item.qid, item.docid), [])
                                        ]})

    async def post_grade(request: Request) -> Response:
        body = await _json(request)
        if isinstance(body, Response):
            return body
        try:
            given = task.grade(body.get("index"), body.get("grade"), seconds=body.get("seconds"),
                               note=body.get("note") or "",
                               llm_shown=body.get("llm_shown", False))
        except InputError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return JSONResponse({"saved": True, **state(given)})

    async def post_undo(request: Request) -> Response:
        body = await _json(request)
        if isinstance(body, Response):
            return body
        index, given = task.undo()
        return JSONResponse({"undone": index, **state(given)})

    async def get_summary(request: Request) -> Response:
        return JSONResponse(task.summary())

    async def post_stop(request: Request) -> Response:
        body = await _json(request)
        if isinstance(body, Response):
            return body
        if on_stop is None:
            return JSONResponse({"error": "this server is not stopped from the page"},
                                status_code=409)
        on_stop()
        return JSONResponse({"stopping": True, **task.summary()})

    routes = [Route("/", page), Route("/api/state", get_state),
              Route("/api/summary", get_summary),
              Route("/api/stop", post_stop, methods=["POST"]),
              Route("/api/item/{index}", get_item),
              Route("/api/grade", post_grade, methods=["POST"]),
              Route("/api/undo", post_undo, methods=["POST"]),
              Mount("/static", StaticFiles(directory=str(static_dir())), name="static")]
    return Starlette(routes=routes, middleware=[Middleware(_Guard, token=token)])


async def _json(request: Request) -> dict | Response:
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return JSONResponse({"error": "send application/json"}, status_code=415)
    try:
        body = await request.json()
    except ValueError:
        return JSONResponse({"error": "the body is not valid JSON"}, status_code=400)
    if not isinstance(body, dict):
        return JSONResponse({"error": "expected a JSON object"}, status_code=400)
    return body
