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
  shows, on request, the probability it gave the move it played, or as a hint on your turn its probabilities over
  your moves. Every game is kept as a game record (docs/records.md), to download when the game is over.
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
                                            below 2**63, too many to try against the cards seen); its state (201)
``GET /api/games/{id}``                     the game's state, as the player at ``seat`` sees it (``"seed": null``
                                            until the game is over); answered at once, even during a search
``POST /api/games/{id}/move``               ``{"index": i}``: play your legal move ``i``
``POST /api/games/{id}/step``               ``{"probabilities": bool}``: the agent to move plays one move (with
                                            ``probabilities``, ``last.probability``: the one of the move played)
``POST /api/games/{id}/next``               deal the match's next deal after a deal's score was shown
``GET /api/games/{id}/probabilities``       on your turn, the network agent's probabilities over your moves
``GET /api/games/{id}/record``              the game's record (docs/records.md), as a one-line JSON Lines file,
                                            once the game is over (409 before: it holds the seed)
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

Bounds (docs/web.md lists them too):

* **Request bodies**: a JSON request up to :data:`MAX_JSON_BYTES` (64 KiB), a record file up to
  :data:`MAX_RECORDS_BYTES` (64 MiB): a larger ``Content-Length`` is answered 413 before the body is read, and a body
  that grows past the limit while it is read is answered 413 at that point (the connection closed, the rest not
  read). At most :data:`MAX_UPLOADS` (2) record files are received and checked at once (one more: 503, its body
  read and dropped, never kept), and
  the files kept for the viewer hold at most :data:`MAX_RECORD_TEXT_KEPT` (128 MiB) of text, so
  uploads take at most about 0.6 GB however many are sent.
* **Part-sent requests**: a request whose headers or body stop arriving for :data:`READ_IDLE_SECONDS` (10 s), or are
  not all in within :data:`READ_TOTAL_SECONDS` (60 s), is dropped (the connection closed; :func:`read_timeout_protocol`
  under ``cassino serve``, and inside the app for a body under any server: 408). At most :data:`MAX_CONNECTIONS` (128)
  connections are served at once (uvicorn answers one more 503).
* **Games**: at most :data:`MAX_GAMES` (64) kept; a new one makes room by forgetting finished games first, then games
  untouched for :data:`GAME_IDLE_SECONDS` (10 minutes); a game in play is never dropped: with every
  slot in play a new game is refused with 503 and a message saying so.
* **Reads never wait on a search**: ``GET /api/games/{id}`` answers the state the game published after its last
  move, at once, even while the agent's move is being searched; a change to a game while its agent's move is being
  computed (a second step, a move) is answered 409 at once rather than waiting for the search.
* **Hidden cards**: while a game is played its state has ``"seed": null`` (the seed gives every hand), its record is
  refused (409: it holds the seed), and the agent's move probabilities are given only for the move it played (its
  other moves would show its hand); once the game is over, the state carries the seed and the record is served.
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
from train.serve_state import GAME_IDLE_SECONDS as GAME_IDLE_SECONDS
from train.serve_state import MAX_GAMES as MAX_GAMES
from train.serve_state import MAX_MOVES_IN_FLIGHT as MAX_MOVES_IN_FLIGHT
from train.serve_state import MAX_RECORD_FILES as MAX_RECORD_FILES
from train.serve_state import MAX_RECORD_TEXT_KEPT as MAX_RECORD_TEXT_KEPT
from train.serve_state import MAX_UPLOADS as MAX_UPLOADS
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
#: A request whose headers or body stop arriving for this long (seconds) is dropped (:func:`read_timeout_protocol`;
#: in the app, a body: 408).
READ_IDLE_SECONDS = 10.0
#: A request's headers and body must all arrive within this long (seconds) from its first byte (64 MiB at about
#: 1 MB/s), else it is dropped.
READ_TOTAL_SECONDS = 60.0
#: The most connections served at once (uvicorn's ``limit_concurrency``: one more is answered 503).
MAX_CONNECTIONS = 128
#: How long a change to a game (a move, the next deal) waits for another quick change to the same game to finish;
#: a change while the agent's move is being computed is answered 409 at once.
GAME_BUSY_WAIT_SECONDS = 2.0
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
    import anyio
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    state = server or Server()

    def check_body(request: Request, limit: int) -> None:
        """Refuse a body before reading it: another site's page (403), a ``Content-Length`` over ``limit`` (413)."""
        origin = request.headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != request.headers.get("host"):
            # a page of another site posting to this local server (the browser says so): refused
            raise RequestError(f"origin: requests from {excerpt(origin)} are refused; use the page this server "
                               "serves", 403, close=True)
        size = request.headers.get("content-length")
        if size is not None and size.strip().isdigit() and int(size) > limit:
            raise RequestError(f"body: larger than {limit} bytes (Content-Length {excerpt(size.strip(), 40)})", 413,
                               close=True)

    async def body_of(request: Request, limit: int = MAX_JSON_BYTES, keep: bool = True) -> bytearray:
        """The request's body: at most ``limit`` bytes (413 as soon as it grows past them), each part within
        :data:`READ_IDLE_SECONDS` of the last and all of it within :data:`READ_TOTAL_SECONDS` (408). ``keep=False``
        reads it and drops each part (a body to refuse, so the client, having sent it, reads the answer)."""
        check_body(request, limit)
        body, size = bytearray(), 0
        stream = request.stream().__aiter__()
        try:
            with anyio.fail_after(READ_TOTAL_SECONDS):
                while True:
                    with anyio.fail_after(READ_IDLE_SECONDS):
                        try:
                            chunk = await stream.__anext__()
                        except StopAsyncIteration:
                            break
                    size += len(chunk)
                    if keep:
                        body += chunk
                    if size > limit:
                        raise RequestError(f"body: larger than {limit} bytes", 413, close=True)
        except TimeoutError:
            raise RequestError(f"body: not received in time (a request must arrive within {READ_TOTAL_SECONDS:g} s, "
                               f"with no pause of {READ_IDLE_SECONDS:g} s)", 408, close=True) from None
        except ClientDisconnect:  # nobody to answer; a short line, not a traceback in the server's log
            raise RequestError("body: the client closed the connection before sending all of it", 400,
                               close=True) from None
        return body

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
        """``fn(*args)`` in a worker thread, under the game's lock. The lock is waited for here, in the event loop,
        holding no thread (a thread per waiting request once kept even ``POST /api/games`` waiting 22 s behind 8
        searches); a game whose agent's move is being computed answers 409 at once, and a game busy with a quick
        change for over :data:`GAME_BUSY_WAIT_SECONDS` too."""
        waited = 0.0
        while not game.lock.acquire(blocking=False):
            if game.searching or waited >= GAME_BUSY_WAIT_SECONDS:
                raise RequestError(f"game: busy: {'the agent' if game.searching else 'another request'} is moving in "
                                   "this game; try again when it has played (GET /api/games/{id} answers at once)",
                                   409)
            await anyio.sleep(0.005)
            waited += 0.005
        try:
            return await run_in_threadpool(fn, *args)
        finally:
            game.lock.release()

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
        return JSONResponse(game.snapshot, status_code=201)

    async def get_game(request: Request) -> Response:
        # the state published after the game's last change: no lock, no thread, whatever search is running
        return JSONResponse(state.game(request.path_params["gid"]).snapshot)

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
        rec = game.record_text()  # once the game is over (published with its last state); 409 before
        return Response(rec + "\n", media_type="application/jsonl",
                        headers={"Content-Disposition": f'attachment; filename="cassino-{game.id}.jsonl"'})

    async def open_records(request: Request) -> Response:
        check_body(request, MAX_RECORDS_BYTES)
        if not state.uploads.acquire(blocking=False):  # refused without waiting; the body read and dropped
            await body_of(request, MAX_RECORDS_BYTES, keep=False)
            raise RequestError(f"body: the server is reading {state.max_uploads} record files already; try again in "
                               "a moment", 503)
        try:
            raw = await body_of(request, MAX_RECORDS_BYTES)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RequestError(f"body: not UTF-8 text: {exc}") from None
            del raw  # the text alone while the file is checked
            rid, listed = await run_in_threadpool(state.open_records, text)
        finally:
            state.uploads.release()
        return JSONResponse({"id": rid, "games": listed}, status_code=201)

    async def replayed(request: Request) -> Response:
        text = request.path_params["n"]
        if not (text.isascii() and text.isdigit() and len(text) <= 9):  # 5000 digits were a 500 (int() refused)
            raise RequestError(f"game: expected a game number from 1, got {excerpt(text)}", 404)
        n = int(text)
        return JSONResponse(await run_in_threadpool(state.replayed, request.path_params["rid"], n))

    async def request_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestError)
        headers = {}
        if exc.retry_after:
            headers["Retry-After"] = str(exc.retry_after)
        if exc.close:  # a body refused unread (or cut short): the connection closes rather than take the rest of it
            headers["Connection"] = "close"
        return JSONResponse({"error": str(exc)}, status_code=exc.status, headers=headers or None)

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


def read_timeout_protocol(idle: float = READ_IDLE_SECONDS, total: float = READ_TOTAL_SECONDS) -> type:
    """uvicorn's h11 protocol with a read timeout: a connection whose request (its headers, or a body the app is
    reading) receives nothing for ``idle`` seconds, or has not all arrived ``total`` seconds after it began, is
    closed (uvicorn itself waits for a part-sent request forever: 100 of them were all still open after 180 s).
    Waiting for the app's answer (a search) is not timed; nor is a connection whose reading uvicorn paused."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class ReadTimeoutH11Protocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._read_since = self._heard_at = self.loop.time()
            self._watch = self.loop.call_later(min(1.0, idle / 2), self._check_read)

        def data_received(self, data: bytes) -> None:
            self._heard_at = self.loop.time()
            super().data_received(data)

        def on_response_complete(self) -> None:
            self._read_since = self._heard_at = self.loop.time()  # the next request's clock
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._watch.cancel()
            super().connection_lost(exc)

        def _reading(self) -> bool:
            """Whether a request is arriving: its headers (no request under way), or a body still to come."""
            cycle = self.cycle
            if cycle is None or cycle.response_complete:
                return True
            return bool(cycle.more_body)

        def _check_read(self) -> None:
            if self.transport.is_closing():
                return
            now = self.loop.time()
            if self.flow.read_paused or not self._reading():  # the app's turn: not the client's delay
                self._read_since = self._heard_at = now
            elif now - self._heard_at > idle or now - self._read_since > total:
                self.transport.close()  # the app, if it is reading the body, is told the client left
                return
            self._watch = self.loop.call_later(min(1.0, idle / 2), self._check_read)

    return ReadTimeoutH11Protocol


def uvicorn_config(app: Any, host: str, port: int, *, idle: float = READ_IDLE_SECONDS,
                   total: float = READ_TOTAL_SECONDS, max_connections: int = MAX_CONNECTIONS) -> Any:
    """uvicorn's configuration for ``cassino serve``: the read timeouts of :func:`read_timeout_protocol` and at most
    ``max_connections`` connections at once."""
    import uvicorn

    return uvicorn.Config(app, host=host, port=port, log_level="warning", http=read_timeout_protocol(idle, total),
                          limit_concurrency=max_connections, timeout_keep_alive=5)


def main(host: str = "127.0.0.1", port: int = 8000, allow_agent: tuple[str, ...] = (), device: str = "auto") -> int:
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
        device: where the trained agents' networks run: auto (a GPU where torch sees one, else the CPU), cpu, cuda,
            cuda:N or mps; the games and bots stay on the CPU.
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
    from agents.device import DeviceError, check_device

    try:
        device = check_device(device)  # before the server starts
    except DeviceError as exc:
        return error(exc)
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
    config = uvicorn_config(create_app(Server(allow_agent, served=(host, port), device=device)), host, port)
    uvicorn.Server(config).run()
    return 0
