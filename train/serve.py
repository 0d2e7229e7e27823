"""``cassino serve``: a local web app to play Cassino against any agent and to step through game records.

Run ``cassino serve`` (``--host 127.0.0.1 --port 8000`` by default: only this machine can connect) and open the
printed address. Two pages in one:

* **Play**: a deal or a whole match against an agent (:mod:`agents.registry`: a bot, ``pimc[:N]`` up to
  :data:`MAX_WEB_SIMULATIONS`, ``pretrained:NAME``, and any spec the operator allows at start-up with
  ``--allow-agent SPEC``, such as ``checkpoint:PATH``, each also as ``endgame:SPEC`` and ``policy:SPEC``: a request
  never names a file or module to load) in any
  preset and player count. The agent plays every other seat
  (your partner too, in partnerships). The page shows the table, the builds with their values and owners, your
  hand and the legal moves to click (the environment's list, as ``cassino play`` offers it); the agents' moves
  come one at a time; each deal ends with its score item by item (docs/rules.md 5). For a network agent the page
  shows, on request, its move probabilities: for the move it is about to play, or as a hint on your turn.
  Every game is kept as a game record (docs/records.md) to download.
* **Replay**: open a game-record file (``cassino eval --save-games``, or a record downloaded from Play) and step
  through any of its games move by move, every hand face up, each deal's tally at its end.

The server is Starlette (run by uvicorn); the page is plain HTML, CSS and JavaScript served from ``train/web/``
(no build step). This module holds the app, its routes, the ``Host`` check and the command line; the games, the
record files opened and the JSON answers' shapes are :mod:`train.serve_state`. The JSON API the page uses, every
answer a JSON object:

==========================================  ===========================================================================
request                                     answer
==========================================  ===========================================================================
``GET /api/options``                        presets with their player counts, agent specs, the default game
``POST /api/games``                         start a game: ``{"preset", "num_players", "opponent", "seat", "seed",
                                            "play": "deal" | "match"}`` (all optional; no seed: a random one
                                            below 2**32); its state (201)
``GET /api/games/{id}``                     the game's state, as the player at ``seat`` sees it
``POST /api/games/{id}/move``               ``{"index": i}``: play your legal move ``i``
``POST /api/games/{id}/step``               ``{"probabilities": bool}``: the agent to move plays one move
``POST /api/games/{id}/next``               deal the match's next deal after a deal's score was shown
``GET /api/games/{id}/probabilities``       the network agent's probabilities over the legal moves now
``GET /api/games/{id}/record``              the game's record (docs/records.md), as a one-line JSON Lines file
``POST /api/records``                       a JSON Lines body: its games listed (fields checked)
``GET /api/records/{id}/{game}``            game ``game`` (from 1) replayed: every position, move and tally
==========================================  ===========================================================================

A malformed request (not JSON, an unknown or mistyped field, a move that is not listed, a step when it is your turn, an
unknown agent spec or preset, an agent the server does not offer) is answered with status 400 and ``{"error": message}``
naming the field; an unknown game with 404, a body over the size limit (or a record of more than
:data:`MAX_VIEWER_DEALS` deals) with 413, a request that another site's page
sends (its ``Origin`` is not this server) with 403, and one whose ``Host`` header names another host than the address
served (DNS rebinding: another site's name that resolves to this machine, :func:`host_allowed`) with 403 too. A step
beyond :data:`MAX_MOVES_IN_FLIGHT` agent moves being computed is answered 503 at once (``Retry-After: 1``), and an
agent (one the operator allowed) that returns something other than a listed move index with 500, naming it.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cassino_env.errors import excerpt
from cassino_env.rules import PRESETS
from train.serve_state import MAX_GAMES as MAX_GAMES
from train.serve_state import MAX_MOVES_IN_FLIGHT as MAX_MOVES_IN_FLIGHT
from train.serve_state import MAX_RECORD_FILES as MAX_RECORD_FILES
from train.serve_state import MAX_VIEWER_DEALS as MAX_VIEWER_DEALS
from train.serve_state import MAX_WEB_SIMULATIONS as MAX_WEB_SIMULATIONS
from train.serve_state import PLAYS as PLAYS
from train.serve_state import LiveGame, RequestError, Server, field_name, parse_json
from train.serve_state import check_opponent as check_opponent
from train.serve_state import game_options as game_options

#: The folder of the page's static files (package data).
WEB_DIR = Path(__file__).resolve().parent / "web"
#: Largest request body accepted: a JSON request, and a game-record file for the viewer (bytes).
MAX_JSON_BYTES = 64 * 1024
MAX_RECORDS_BYTES = 64 * 1024 * 1024
#: Host names that always name this machine's loopback addresses.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def split_host(header: str) -> tuple[str, int | None] | None:
    """``(host, port)`` of a ``Host`` header (``localhost:8000``, ``[::1]:8000``, ``127.0.0.1``); None when it is
    malformed. The host is lower-cased, an IPv6 literal without its brackets."""
    header = header.strip().lower()
    if header.startswith("["):
        host, sep, rest = header[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    else:
        host, sep, port_text = header.partition(":")
        port_text = port_text if sep else None
    if not host or (port_text is not None and not (port_text.isascii() and port_text.isdigit()
                                                    and len(port_text) <= 5)):
        return None
    return host, None if port_text is None else int(port_text)


def host_allowed(header: str | None, served: tuple[str, int]) -> bool:
    """Whether a request's ``Host`` header names the address the server listens on (``served``: host, port), so a
    page of another site cannot reach it through a name of its own that resolves here (DNS rebinding): the port must
    be the served one (80 when the header names none) and the host the served address; on a loopback address also
    ``localhost``, ``127.0.0.1`` and ``::1``; on every interface (``0.0.0.0``, ``::``) any IP address, ``localhost``
    and this machine's host name."""
    import ipaddress

    parsed = split_host(header or "")
    if parsed is None:
        return False
    host, port = parsed
    listen, listen_port = served[0].strip().lower().strip("[]"), served[1]
    if (80 if port is None else port) != listen_port:
        return False
    if host == listen:
        return True
    wildcard = listen in ("0.0.0.0", "::")
    loopback = listen in LOOPBACK_NAMES or _is_loopback(listen)
    if (loopback or wildcard) and host in LOOPBACK_NAMES:
        return True
    if wildcard:
        try:
            ipaddress.ip_address(host)
            return True
        except ValueError:
            return host in {socket.gethostname().lower(), socket.getfqdn().lower()}
    return False


def _is_loopback(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- the app ----------------------------------------------------------------------------------------------------------


def create_app(server: Server | None = None) -> Any:
    """The Starlette app (the page, its static files and the JSON API of the module docstring)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    state = server or Server()

    async def body_of(request: Request, limit: int = MAX_JSON_BYTES) -> bytes:
        origin = request.headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != request.headers.get("host"):
            # a page of another site posting to this local server (the browser says so): refused
            raise RequestError(f"origin: requests from {excerpt(origin)} are refused; use the page this server "
                               "serves", 403)
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > limit:
            raise RequestError(f"body: larger than {limit} bytes", 413)
        chunks, total = [], 0
        async for chunk in request.stream():
            total += len(chunk)
            if total > limit:
                raise RequestError(f"body: larger than {limit} bytes", 413)
            chunks.append(chunk)
        return b"".join(chunks)

    async def json_body(request: Request) -> dict[str, Any]:
        raw = await body_of(request)
        if not raw.strip():
            return {}
        body = parse_json(raw)
        if not isinstance(body, dict):
            raise RequestError(f"body: expected a JSON object, got {type(body).__name__}")
        return body

    def only(body: Mapping[str, Any], *fields: str) -> None:
        for k in body:
            if k not in fields:
                raise RequestError(f"{field_name(k)}: unknown field; fields are {', '.join(fields) or 'none'}")

    async def locked(game: LiveGame, fn: Any, *args: Any) -> Any:
        def run() -> Any:
            with game.lock:
                return fn(*args)

        return await run_in_threadpool(run)

    async def index(request: Request) -> Response:
        return FileResponse(WEB_DIR / "index.html")

    async def options(request: Request) -> Response:
        from agents.registry import LADDER, SEARCH_NAMES, pretrained_names

        return JSONResponse({
            "presets": {name: list(counts) for name, (counts, _) in PRESETS.items()},
            "agents": [*LADDER, *SEARCH_NAMES[:1], *(f"pretrained:{n}" for n in pretrained_names()),
                       *(s for s in state.allowed if not s.startswith("pretrained:"))],
            "pretrained": list(pretrained_names()),
            "defaults": {"preset": "classic", "num_players": 2, "opponent": "pretrained:classic", "seat": 0,
                         "play": "deal"},
        })

    async def new_game(request: Request) -> Response:
        body = await json_body(request)
        game = await run_in_threadpool(state.start, body)
        return JSONResponse(await locked(game, game.state), status_code=201)

    async def get_game(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        return JSONResponse(await locked(game, game.state))

    async def move(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        body = await json_body(request)
        only(body, "index")
        if "index" not in body:
            raise RequestError("index: required field is missing")
        return JSONResponse(await locked(game, game.move, body["index"]))

    async def step(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        body = await json_body(request)
        only(body, "probabilities")
        probs = body.get("probabilities", False)
        if not isinstance(probs, bool):
            raise RequestError(f"probabilities: expected true or false, got {json.dumps(probs)[:40]}")
        if not state.moves_in_flight.acquire(blocking=False):  # answered at once, not queued behind the searches
            raise RequestError(f"step: the server is busy computing {state.max_moves_in_flight} agent moves; try "
                               "again in a moment", 503)
        try:
            return JSONResponse(await locked(game, game.step, probs))
        finally:
            state.moves_in_flight.release()

    async def next_deal(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        only(await json_body(request))
        return JSONResponse(await locked(game, game.next_deal))

    async def probabilities(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        return JSONResponse(await locked(game, game.probabilities))

    async def record(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        rec = await locked(game, lambda: json.dumps(game.record, separators=(",", ":")))
        return Response(rec + "\n", media_type="application/jsonl",
                        headers={"Content-Disposition": f'attachment; filename="cassino-{game.id}.jsonl"'})

    async def open_records(request: Request) -> Response:
        raw = await body_of(request, MAX_RECORDS_BYTES)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RequestError(f"body: not UTF-8 text: {exc}") from None
        rid, listed = await run_in_threadpool(state.open_records, text)
        return JSONResponse({"id": rid, "games": listed}, status_code=201)

    async def replayed(request: Request) -> Response:
        text = request.path_params["n"]
        if not (text.isascii() and text.isdigit() and len(text) <= 9):  # 5000 digits were a 500 (int() refused)
            raise RequestError(f"game: expected a game number from 1, got {excerpt(text)}", 404)
        n = int(text)
        return JSONResponse(await run_in_threadpool(state.replayed, request.path_params["rid"], n))

    async def request_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestError)
        return JSONResponse({"error": str(exc)}, status_code=exc.status,
                            headers={"Retry-After": "1"} if exc.status == 503 else None)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
        return Response(exc.detail, status_code=exc.status_code, media_type="text/plain")

    routes = [
        Route("/", index),
        Route("/api/options", options),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{gid}", get_game),
        Route("/api/games/{gid}/move", move, methods=["POST"]),
        Route("/api/games/{gid}/step", step, methods=["POST"]),
        Route("/api/games/{gid}/next", next_deal, methods=["POST"]),
        Route("/api/games/{gid}/probabilities", probabilities),
        Route("/api/games/{gid}/record", record),
        Route("/api/records", open_records, methods=["POST"]),
        Route("/api/records/{rid}/{n}", replayed),
        Mount("/static", StaticFiles(directory=WEB_DIR), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={RequestError: request_error, HTTPException: http_error})
    if state.served is None:
        return app
    served = state.served

    async def checked_host(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), None)
            if not host_allowed(header, served):  # DNS rebinding: another site's name for this address
                shown = f"[{served[0]}]" if ":" in served[0] else served[0]
                answer = JSONResponse({"error": f"host: requests for {excerpt(header)} are refused; this server "
                                                f"answers as {shown}:{served[1]}"}, status_code=403)
                await answer(scope, receive, send)
                return
        await app(scope, receive, send)

    return checked_host


def free_port(host: str, port: int = 0) -> int:
    """``port`` if it is free on ``host`` now, or with ``port=0`` a free port the system picks.

    Raises:
        OSError: the address cannot be bound (in use, or not an address of this machine).
    """
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, port))
        return int(s.getsockname()[1])


def main(host: str = "127.0.0.1", port: int = 8000, allow_agent: tuple[str, ...] = ()) -> int:
    """Serve the web app: play any agent in the browser, and step through game-record files.

    Open the printed address in a browser. Play a deal or a match against a bot, pimc, pretrained:NAME or an agent
    allowed with --allow-agent (checkpoint:PATH, your own MODULE:OBJECT) in any preset; open a file written by
    cassino eval --save-games to watch its games move by move. Ctrl+C stops the server.

    Args:
        host: the address to listen on; the default 127.0.0.1 lets only this machine connect.
        port: the TCP port (0: any free port).
        allow_agent: agent specs the page may ask for besides the bots ({bots}; pimc:N up to 20000) and
            pretrained:NAME (checkpoint:PATH, MODULE:OBJECT, a larger pimc:N), each exactly as it will be asked for;
            the page can name no other file or module. Agent specs: {agent_specs}.
    """
    from cassino_env.errors import shown_name
    from train.errors import error

    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError as exc:
        return error(f"cassino serve needs the web extra: pip install 'cassino-rl[web]' ({exc})")
    if not 0 <= port <= 65535:
        return error(f"port: expected 0..65535, got {port}")
    if not host.strip():  # "" listened on every interface and printed http://:8799/
        return error("host: expected an address to listen on (127.0.0.1: this machine only; 0.0.0.0: every "
                     "interface), got an empty one")
    host = host.strip()
    if not host.isprintable():  # a line break would split the error line and the address printed
        return error(f"host: expected an address to listen on, got {shown_name(host)}")
    if any(not spec.strip() for spec in allow_agent):
        return error("allow-agent: expected agent specs, got an empty one")
    from agents.registry import AgentSpecError, check_spec

    for spec in allow_agent:  # the registry's check (names, budgets, nesting), before the server starts
        try:
            check_spec(spec)
        except AgentSpecError as exc:
            return error(f"allow-agent: {exc}")
    try:
        port = free_port(host, port)
    except OSError as exc:
        return error(f"host: cannot listen on {shown_name(host)} port {port}: {exc.strerror or exc}")
    shown = f"[{host}]" if ":" in host else host
    print(f"Cassino is served at http://{shown}:{port}/  (Ctrl+C stops it)", flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: listening on {host}: other machines can reach the server", file=sys.stderr)
    config = uvicorn.Config(create_app(Server(allow_agent, served=(host, port))), host=host, port=port,
                            log_level="warning")
    uvicorn.Server(config).run()
    return 0
