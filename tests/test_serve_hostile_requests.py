"""Hostile requests to the web app (issue 27): the Host header against DNS rebinding, search work in flight bounded
(503 at once), agents' moves that are not integers, huge values quoted as excerpts, record bodies with a raw U+2028;
and a table-driven fuzz of the request bodies (each a 4xx JSON answer naming the field, never a 500 traceback)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the web extra (pip install -e '.[web]') is not installed")

from starlette.testclient import TestClient  # noqa: E402

from cassino_env.rules import make_rules  # noqa: E402
from train.records import random_record  # noqa: E402
from train.serve import Server, create_app, host_allowed, split_host  # noqa: E402

RULES = make_rules("classic")


# --- 13. the Host header (DNS rebinding) ---------------------------------------------------------------------------


def _served(host: str = "127.0.0.1", port: int = 8000) -> TestClient:
    shown = f"[{host}]" if ":" in host else host
    return TestClient(create_app(Server(served=(host, port))), base_url=f"http://{shown}:{port}")


@pytest.mark.parametrize(("header", "ok"), [
    ("127.0.0.1:8000", True), ("localhost:8000", True), ("LOCALHOST:8000", True), ("[::1]:8000", True),
    ("evil.example:8000", False), ("evil.example", False), ("127.0.0.1:8001", False), ("127.0.0.1", False),
    ("127.0.0.1.evil.example:8000", False), ("localhost.:8000", False), ("", False), (":8000", False),
    ("[::1", False), ("[::1]x", False), ("localhost:80000000", False), ("localhost:-1", False),
    ("x" * 10_000, False), ("127.0.0.1:8000:8000", False), ("user@127.0.0.1:8000", False),
])
def test_host_header_must_name_the_served_address(header: str, ok: bool) -> None:
    """A POST with Origin http://evil.example:8000 and a matching Host was accepted: a page of another site whose name
    resolves to 127.0.0.1 could play on (and read) the local server."""
    client = _served()
    r = client.post("/api/games", json={"opponent": "random"}, headers={"host": header, "origin": f"http://{header}"})
    assert (r.status_code == 201) == ok, (r.status_code, r.text[:200])
    if not ok:
        assert r.status_code == 403 and r.json()["error"].startswith("host: requests for ")
        assert len(r.text) < 400
    assert (client.get("/", headers={"host": header}).status_code == 200) == ok


def test_every_interface_takes_ip_addresses_and_localhost_but_no_other_name() -> None:
    served = ("0.0.0.0", 8799)
    assert host_allowed("192.168.1.20:8799", served) and host_allowed("localhost:8799", served)
    assert host_allowed("[fe80::1]:8799", served) and host_allowed("0.0.0.0:8799", served)
    assert not host_allowed("evil.example:8799", served) and not host_allowed("192.168.1.20:8000", served)
    assert host_allowed("[::1]:8000", ("::1", 8000)) and host_allowed("localhost:8000", ("localhost", 8000))
    assert not host_allowed("127.0.0.1:8000", ("192.168.1.20", 8000))
    assert split_host("[::1]:8000") == ("::1", 8000) and split_host("a:b") is None


def test_serve_main_passes_the_served_address(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """cassino serve builds its app with the address it listens on, so the Host check is on."""
    import uvicorn

    from train import serve

    seen: dict[str, Any] = {}

    class Fake:
        def __init__(self, config: Any) -> None:
            seen["app"] = config.app

        def run(self) -> None:
            pass

    monkeypatch.setattr(uvicorn, "Server", Fake)
    assert serve.main(host="127.0.0.1", port=0) == 0
    port = int(capsys.readouterr().out.split(":")[2].split("/")[0])
    client = TestClient(seen["app"], base_url=f"http://127.0.0.1:{port}")
    assert client.get("/api/options").status_code == 200
    assert client.get("/api/options", headers={"host": f"evil.example:{port}"}).status_code == 403


# --- 13. search work in flight, bounded -----------------------------------------------------------------------------


class _Blocking:
    """An agent whose move waits for ``release`` (a long search)."""

    name = "slow"

    def __init__(self, release: threading.Event, started: threading.Semaphore) -> None:
        self.release, self.started = release, started

    def act(self, obs: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
        self.started.release()
        self.release.wait(30)
        return np.zeros(len(obs["action_mask"]), dtype=np.int64)


def _agent_games(server: Server, client: TestClient, agent: Any, n: int) -> list[str]:
    """``n`` games where the agent is to move (the person sits at seat 1), their agent replaced by ``agent``."""
    ids = []
    for _ in range(n):
        game = client.post("/api/games", json={"opponent": "random", "seat": 1, "seed": 1}).json()
        assert game["status"] == "agent_turn"
        server.games[game["id"]].agent = agent
        ids.append(game["id"])
    return ids


def test_agent_moves_in_flight_are_bounded_and_the_rest_answered_503_at_once() -> None:
    """45 simultaneous pimc:20000 steps kept POST /api/games waiting 120 s (every server thread held by a search);
    now a step beyond the bound is answered 503 at once and new games start."""
    server = Server(max_moves_in_flight=2)
    client = TestClient(create_app(server))
    release, started = threading.Event(), threading.Semaphore(0)
    ids = _agent_games(server, client, _Blocking(release, started), 3)
    answers: list[int] = []
    threads = [threading.Thread(target=lambda g=g: answers.append(client.post(f"/api/games/{g}/step").status_code))
               for g in ids[:2]]
    try:
        for t in threads:
            t.start()
        assert started.acquire(timeout=20) and started.acquire(timeout=20)  # two searches running
        t0 = time.monotonic()
        busy = client.post(f"/api/games/{ids[2]}/step")
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        assert "busy computing 2 agent moves" in busy.json()["error"]
        assert client.post("/api/games", json={"opponent": "random"}).status_code == 201
        assert time.monotonic() - t0 < 5
    finally:
        release.set()
        for t in threads:
            t.join(30)
    assert answers == [200, 200]
    assert client.post(f"/api/games/{ids[2]}/step").status_code == 200  # the slots are free again


# --- 10. an agent (one the operator allowed) returning moves that are not integers ------------------------------------


class _Returns:
    name = "sloppy"

    def __init__(self, value: Any) -> None:
        self.value = value

    def act(self, obs: dict[str, Any], rng: np.random.Generator) -> Any:
        return self.value


@pytest.mark.parametrize("value", [[0.7], [None], None, ["0"], [True], [[0, 1]], np.zeros((1, 2)), [400], [-1], []])
def test_a_step_of_an_agent_returning_a_non_integer_move_is_a_json_error(value: Any) -> None:
    """serve.py played int(agent.act(...)[0]): 0.7 was move 0, an array its first element, None a TypeError (500
    traceback)."""
    server = Server()
    client = TestClient(create_app(server), raise_server_exceptions=False)
    (gid,) = _agent_games(server, client, _Returns(value), 1)
    r = client.post(f"/api/games/{gid}/step")
    assert r.status_code == 500 and r.json()["error"].startswith("opponent: agent "), r.text[:300]
    assert client.get(f"/api/games/{gid}").json()["log"] == []  # nothing was played


# --- 9 and 13. record bodies: excerpts, U+2028 ------------------------------------------------------------------------


def _records_body(records: list[Any]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def test_a_raw_line_separator_in_a_record_body_is_not_a_line_break() -> None:
    rec = random_record(RULES, seed=2)
    rec["seats"] = ["a\u2028b", "c\u2029d"]
    client = TestClient(create_app(Server()))
    r = client.post("/api/records", content=_records_body([rec, rec]))
    assert r.status_code == 201, r.text[:300]
    rid = r.json()["id"]
    assert [g["game"] for g in r.json()["games"]] == [1, 2]
    assert client.get(f"/api/records/{rid}/2").json()["names"] == ["a\u2028b", "c\u2029d"]


BIG = "x" * 2_000_000


def _bad_records() -> dict[str, Any]:
    base = random_record(RULES, seed=1)
    deal = base["deals"][0]
    return {
        "rules": {**base, "rules": BIG}, "switch": {**base, "rules": {"preset": "classic", BIG: 1}},
        "session_wins": {**base, "session_wins": BIG}, "unknown": {**base, BIG: 1},
        "version_true": {**base, "version": True}, "version_float": {**base, "version": 1.0},
        "move": {**base, "deals": [{**deal, "moves": [{"action": "trail", "card": BIG}]}]},
        "points": {**base, "deals": [{**deal, "points": [BIG, 0]}]},
    }


@pytest.mark.parametrize("kind", sorted(_bad_records()))
def test_fuzz_record_bodies_answer_a_short_error(kind: str) -> None:
    """A 2 MB value was quoted whole in the 400 answer (20 MB JSON bodies for larger ones)."""
    client = TestClient(create_app(Server()))
    rec = _bad_records()[kind]
    r = client.post("/api/records", content=_records_body([rec]))
    if kind in ("move", "points"):  # fields pass; the game fails when it is replayed
        assert r.status_code == 201
        r = client.get(f"/api/records/{r.json()['id']}/1")
    assert r.status_code == 400 and len(r.content) < 1500, (r.status_code, r.text[:300])


# --- Also: a table-driven fuzz of the JSON request bodies ------------------------------------------------------------

GAME_BODIES: list[tuple[Any, int]] = [
    (b"", 201), (b"{}", 201), (b"null", 400), (b"[]", 400), (b"7", 400), (b'"x"', 400), (b"{", 400),
    (b'{"a": 1, "a": 2}', 400), (b"\xff\xfe", 400), (b'{"seed": 1e400}', 400), (b'{"seed": ' + b"9" * 5000 + b"}", 400),
    (b"[" * 100_000, 413), (b'{"' + b"k" * 60_000 + b'": 1}', 400), (b'{"opponent": "' + b"x" * 60_000 + b'"}', 400),
    (b'{"seat": -1}', 400), (b'{"seat": 99999999999999999999}', 400), (b'{"seat": true}', 400),
    (b'{"seat": 1.0}', 400), (b'{"num_players": 3}', 201), (b'{"num_players": 0}', 400), (b'{"preset": 7}', 400),
    (b'{"preset": "' + b"p" * 50_000 + b'"}', 400), (b'{"play": "session"}', 400), (b'{"seed": -1}', 400),
    (b'{"seed": 9223372036854775808}', 400), (b'{"opponent": "pimc:+99999999"}', 400),
    (b'{"opponent": "checkpoint:/etc/passwd"}', 400), (b'{"opponent": "os:system"}', 400),
    (b'{"opponent": ""}', 400), (b'{"opponent": "random\\u0000"}', 400), (b" " * 70_000, 413),
]


@pytest.mark.parametrize(("body", "status"), GAME_BODIES, ids=[f"{i}:{b[:20]!r}" for i, (b, _) in
                                                               enumerate(GAME_BODIES)])
def test_fuzz_new_game_bodies(body: bytes, status: int) -> None:
    client = TestClient(create_app(Server()), raise_server_exceptions=False)
    r = client.post("/api/games", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, (r.status_code, r.text[:300])
    if status >= 400:
        assert set(r.json()) == {"error"} and len(r.content) < 1000, r.text[:300]


MOVE_BODIES: list[tuple[str, bytes]] = [
    ("move", b"{}"), ("move", b'{"index": -1}'), ("move", b'{"index": 0.0}'), ("move", b'{"index": "0"}'),
    ("move", b'{"index": true}'), ("move", b'{"index": null}'), ("move", b'{"index": 99999999999999999999999}'),
    ("move", b'{"index": [0]}'), ("move", b'{"index": 0, "x": 1}'), ("step", b'{"probabilities": 1}'),
    ("step", b'{"' + b"k" * 60_000 + b'": 1}'), ("next", b'{"x": 1}'), ("next", b"[]"), ("move", b"nul\x00l"),
]


@pytest.mark.parametrize(("route", "body"), MOVE_BODIES, ids=[f"{i}:{r}:{b[:20]!r}" for i, (r, b) in
                                                               enumerate(MOVE_BODIES)])
def test_fuzz_game_action_bodies(route: str, body: bytes) -> None:
    client = TestClient(create_app(Server()), raise_server_exceptions=False)
    game = client.post("/api/games", json={"opponent": "random", "seat": 0, "seed": 3}).json()
    r = client.post(f"/api/games/{game['id']}/{route}", content=body)
    assert r.status_code == 400 and set(r.json()) == {"error"} and len(r.content) < 1000, (r.status_code,
                                                                                            r.text[:300])
    assert client.get(f"/api/games/{game['id']}").json()["log"] == []


@pytest.mark.parametrize("path", ["/api/games/" + "x" * 20_000, "/api/records/" + "y" * 20_000 + "/1",
                                  "/api/records/z/" + "9" * 5000, "/api/games/%00"])
def test_fuzz_long_ids_answer_short_404s(path: str) -> None:
    r = TestClient(create_app(Server())).get(path)
    assert r.status_code == 404 and len(r.content) < 1000


def test_the_pages_answers_are_unchanged_for_its_own_host() -> None:
    """The check refuses nothing the page itself sends: its own Host and Origin."""
    client = _served("127.0.0.1", 8000)
    game = client.post("/api/games", json={"opponent": "random", "seat": 0},
                       headers={"origin": "http://127.0.0.1:8000"})
    assert game.status_code == 201
