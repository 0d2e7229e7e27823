"""The web app's JSON API (train/serve.py, ``cassino serve``) over HTTP with Starlette's TestClient: whole deals and
matches played through it replay through the oracle with the scores it showed, network probabilities, the record
viewer, and a clear 4xx error for every malformed request."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the web extra (pip install -e '.[web]') is not installed")

from starlette.testclient import TestClient  # noqa: E402

import cassino_env  # noqa: E402
from agents.registry import PRETRAINED_DIR  # noqa: E402
from cassino_env.rules import make_rules  # noqa: E402
from train import cli  # noqa: E402
from train.records import random_record, replay  # noqa: E402
from train.serve import MAX_WEB_SIMULATIONS, WEB_DIR, Server, create_app, main  # noqa: E402

#: A checkpoint file, for a checkpoint:PATH opponent (the one shipped as pretrained:matsuda).
MATSUDA = PRETRAINED_DIR / "matsuda.pt"


@pytest.fixture(scope="module")
def client() -> TestClient:
    """The app as `cassino serve --allow-agent checkpoint:MATSUDA` serves it."""
    return TestClient(create_app(Server(allow=[f"checkpoint:{MATSUDA}"])))


def play_out(client: TestClient, game: dict[str, Any], pick: int = 0) -> dict[str, Any]:
    """Play the game's current deal to its end: the person plays listed move ``pick`` (or the last one)."""
    gid = game["id"]
    for _ in range(400):
        if game["status"] in ("deal_over", "game_over"):
            return game
        if game["status"] == "your_turn":
            moves = game["moves"]
            assert moves and [m["index"] for m in moves] == list(range(len(moves)))
            r = client.post(f"/api/games/{gid}/move", json={"index": min(pick, len(moves) - 1)})
        else:
            r = client.post(f"/api/games/{gid}/step", json={})
            assert r.json()["last"]["seat"] != game["seat"]
        assert r.status_code == 200, r.text
        game = r.json()
    raise AssertionError("the deal did not end")


def shown_score_matches_oracle(score: dict[str, Any], deal: Any) -> None:
    """The score the page shows for a deal equals the oracle's score_deal of the replayed deal's last position."""
    tally = cassino_env.score_deal(deal.positions[-1])
    assert score["totals"] == tally["totals"]
    assert score["items"] == [[item, [side[item] for side in tally["items"]]] for item in tally["items"][0]]


@pytest.mark.parametrize(("preset", "players", "seat", "opponent"), [
    ("classic", 2, 0, "greedy"), ("classic", 4, 1, "beginner"), ("cicera", 4, 2, "greedy"), ("bga", 3, 2, "random"),
    ("royal", 2, 1, "advanced"), ("stadium", 2, 0, "pimc:4"), ("matsuda", 2, 1, f"checkpoint:{MATSUDA}"),
])
def test_a_whole_deal_replays_with_the_shown_score(client: TestClient, preset: str, players: int, seat: int,
                                                   opponent: str) -> None:
    r = client.post("/api/games", json={"preset": preset, "num_players": players, "opponent": opponent, "seat": seat,
                                        "seed": 12345, "play": "deal"})
    assert r.status_code == 201, r.text
    game = r.json()
    assert game["names"][seat] == "you" and game["seed"] is None and game["seed_text"] is None  # hidden in play
    pos = game["position"]
    assert [h is None for h in pos["hands"]] == [p != seat for p in range(players)]  # only your hand is shown
    assert pos["hand_counts"][seat] == len(pos["hands"][seat]) > 0
    if players == 4:
        assert game["names"][(seat + 2) % 4] == f"{opponent} (your partner)"
    game = play_out(client, game, pick=1)
    assert game["status"] == "game_over" and game["moves"] == []
    assert game["seed"] == 12345 and game["seed_text"] == "12345"  # shown once the game is over
    rec = client.get(f"/api/games/{game['id']}/record")
    assert rec.status_code == 200 and rec.headers["content-type"].startswith("application/jsonl")
    record = json.loads(rec.text)
    assert record["seats"][seat] == "human" and record["seed"] == 12345 and record["play"] == "deal"
    replayed = replay(record, 1, positions=True)
    shown_score_matches_oracle(game["score"], replayed.deals[0])
    assert [m["move"] for m in game["log"]] == replayed.deals[0].moves


def test_a_match_deal_by_deal(client: TestClient) -> None:
    game = client.post("/api/games", json={"opponent": "random", "seed": 7, "play": "match"}).json()
    scores = []
    for _ in range(30):
        game = play_out(client, game, pick=10)
        scores.append(game["score"])
        if game["status"] == "game_over":
            break
        assert game["status"] == "deal_over"
        assert client.post(f"/api/games/{game['id']}/move", json={"index": 0}).status_code == 400
        game = client.post(f"/api/games/{game['id']}/next", json={}).json()
        assert game["deal"] == len(scores) + 1 and game["score"] is None and game["log"] == []
    assert game["winner"] in (0, 1)
    record = json.loads(client.get(f"/api/games/{game['id']}/record").text)
    replayed = replay(record, 1, positions=True)
    assert len(replayed.deals) == len(scores) > 1 and record["match_winners"] == [game["winner"]]
    for score, deal in zip(scores, replayed.deals, strict=True):
        shown_score_matches_oracle(score, deal)
        assert score["match_totals"] == deal.match_scores


def test_network_probabilities(client: TestClient) -> None:
    game = client.post("/api/games", json={"opponent": "pretrained:classic", "seed": 3, "seat": 1,
                                           "play": "deal"}).json()
    assert game["network"] is True and game["status"] == "agent_turn"
    # on the agent's turn its probabilities would list its moves, and so the cards of its hand: refused
    r = client.get(f"/api/games/{game['id']}/probabilities")
    assert r.status_code == 400 and r.json()["error"].startswith("probabilities: only on your turn")
    step = client.post(f"/api/games/{game['id']}/step", json={"probabilities": True}).json()
    last = step["last"]
    assert set(last) == {"seat", "text", "move", "probability"}  # the move played, and nothing of the others
    assert 0.0 < last["probability"] <= 1.0
    assert last["move"] == step["log"][-1]["move"] and last["seat"] == 0
    # on your turn: what the network would play in your seat
    mine = client.get(f"/api/games/{game['id']}/probabilities").json()
    assert mine["seat"] == 1 and [m["move"] for m in mine["moves"]] == [m["move"] for m in step["moves"]]
    bot = client.post("/api/games", json={"opponent": "greedy", "seed": 3}).json()
    r = client.get(f"/api/games/{bot['id']}/probabilities")
    assert r.status_code == 400 and "not a network agent" in r.json()["error"]
    assert bot["network"] is False


@pytest.mark.parametrize(("body", "message"), [
    ({"preset": "poker"}, "preset: unknown preset"), ({"num_players": 5}, "preset: "),
    ({"opponent": "nobody"}, "opponent: 'nobody' is not offered"),
    ({"opponent": "checkpoint:/no/such.pt"}, "opponent: 'checkpoint:/no/such.pt' is not offered"),
    ({"opponent": "checkpoint:/etc/passwd"}, "opponent: 'checkpoint:/etc/passwd' is not offered by this server"),
    ({"opponent": "checkpoint:../../x.pt"}, "opponent: 'checkpoint:../../x.pt' is not offered"),
    ({"opponent": "json:loads"}, "opponent: 'json:loads' is not offered"),  # was a 500: json.loads(rules) ran
    ({"opponent": "os:getcwd"}, "opponent: 'os:getcwd' is not offered"),  # was: os imported at a request's word
    ({"opponent": f"pimc:{MAX_WEB_SIMULATIONS + 1}"}, f"opponent: pimc:N here takes at most {MAX_WEB_SIMULATIONS}"),
    ({"opponent": "pimc:1000000000"}, "opponent: pimc:N needs a positive number of at most"),  # was: hours a move
    ({"opponent": "pimc:x"}, "opponent: pimc:N needs a positive number"), ({"opponent": "pimc:0"}, "opponent: "),
    ({"opponent": ""}, "opponent: '' is not offered"),  # was taken silently as the default
    ({"opponent": "pretrained:../matsuda"}, "opponent: unknown pretrained agent"),
    ({"preset": ""}, "preset: unknown preset ''"), ({"play": ""}, "play: expected one of"),  # were the defaults
    ({"seat": 2}, "seat: expected a seat 0..1"), ({"seat": True}, "seat: expected an integer"),
    ({"seed": -1}, "seed: expected an integer 0 <= seed < 2\\*\\*63"), ({"seed": 2**63}, "seed: "),
    ({"seed": "7"}, "seed: expected an integer"), ({"play": "forever"}, "play: expected one of deal, match"),
    ({"colour": "red"}, "colour: unknown field"),
])
def test_bad_new_game_requests(client: TestClient, body: dict[str, Any], message: str) -> None:
    r = client.post("/api/games", json=body)
    assert r.status_code == 400
    assert set(r.json()) == {"error"}
    assert __import__("re").match(message, r.json()["error"]), r.json()["error"]


def test_only_the_offered_agents_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request can name no file to load and no module to import: only the built-in specs and the ones the
    operator allowed at start-up reach agents.registry.make_agent."""
    import agents.registry

    built: list[str] = []
    real = agents.registry.make_agent
    monkeypatch.setattr(agents.registry, "make_agent",
                        lambda spec, rules, **kw: built.append(spec) or real(spec, rules, **kw))
    plain = TestClient(create_app())
    for spec in (f"checkpoint:{MATSUDA}", "agents.pimc:PIMCAgent", "antigravity:x"):
        r = plain.post("/api/games", json={"opponent": spec})
        assert r.status_code == 400 and "is not offered by this server" in r.json()["error"], r.text
        assert "--allow-agent" in r.json()["error"]
    assert built == []
    assert "antigravity" not in __import__("sys").modules
    for spec in ("greedy", "pimc:8", "pretrained:classic"):
        assert plain.post("/api/games", json={"opponent": spec, "seed": 1}).status_code == 201
    allowing = TestClient(create_app(Server(allow=["agents.pimc:PIMCAgent", f"pimc:{MAX_WEB_SIMULATIONS * 2}"])))
    for spec in ("agents.pimc:PIMCAgent", f"pimc:{MAX_WEB_SIMULATIONS * 2}"):
        assert allowing.post("/api/games", json={"opponent": spec, "seed": 1}).status_code == 201
        assert spec in allowing.get("/api/options").json()["agents"]
    assert built == ["greedy", "pimc:8", "pretrained:classic", "agents.pimc:PIMCAgent",
                     f"pimc:{MAX_WEB_SIMULATIONS * 2}"]
    assert allowing.post("/api/games", json={"opponent": "agents.bots:make_bot"}).status_code == 400


@pytest.mark.parametrize("raw", [b'{"a":' * 5000 + b"1" + b"}" * 5000, b"[" * 30000, b"1" * 5000,
                                 b'{"seed": 1, "seed": 2}'])
def test_hostile_json_bodies_are_400(client: TestClient, raw: bytes) -> None:
    """Deep nesting and a 5000-digit number were 500 (RecursionError, ValueError); a field given twice was taken."""
    r = client.post("/api/games", content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"].startswith(("body: not valid JSON", "'seed': the field")), r.text


def test_malformed_requests(client: TestClient) -> None:
    for raw in (b"{oops", b"[1, 2]", b"\xff\xfe"):
        r = client.post("/api/games", content=raw, headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error"].startswith("body: ")
    r = client.post("/api/games", content=b" " * (70 * 1024), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "larger than" in r.json()["error"]
    game = client.post("/api/games", json={"opponent": "greedy", "seed": 1}).json()
    gid = game["id"]
    assert game["status"] == "your_turn"
    cases = [("move", {}, "index: required"), ("move", {"index": "0"}, "index: expected a listed move"),
             ("move", {"index": 99}, "index: expected a listed move"), ("move", {"index": 0, "x": 1}, "x: unknown"),
             ("step", {}, "step: no agent is to move"), ("step", {"probabilities": "yes"}, "probabilities: expected"),
             ("next", {}, "next: the deal is not over")]
    for path, body, message in cases:
        r = client.post(f"/api/games/{gid}/{path}", json=body)
        assert r.status_code == 400 and r.json()["error"].startswith(message), (path, r.json())
    assert client.get(f"/api/games/{gid}").json()["moves"] == game["moves"]  # nothing was applied
    r = client.get("/api/games/no-such-game")
    assert r.status_code == 404 and "no game" in r.json()["error"]
    assert client.post("/api/games/no-such-game/move", json={"index": 0}).status_code == 404
    r = client.post("/api/games", json={}, headers={"Origin": "http://elsewhere.example"})
    assert r.status_code == 403 and r.json()["error"].startswith("origin: requests from 'http://elsewhere.example'")
    assert client.post("/api/games", json={"opponent": "random"},
                       headers={"Origin": "http://testserver"}).status_code == 201  # the page's own origin
    r = client.get("/api/games")  # POST only
    assert r.status_code == 405 and "error" in r.json()
    assert client.get("/api/nothing").status_code == 404


def test_record_viewer(client: TestClient) -> None:
    recs = [random_record(make_rules("classic"), seed=s) for s in (1, 2)] + \
           [random_record(make_rules("bga", 4), seed=3, play="match")]
    text = "".join(json.dumps(r) + "\n" for r in recs)
    r = client.post("/api/records", content=text.encode())
    assert r.status_code == 201
    listed = r.json()
    assert [g["game"] for g in listed["games"]] == [1, 2, 3] and listed["games"][2]["preset"] == "bga"
    game = client.get(f"/api/records/{listed['id']}/3").json()
    assert len(game["deals"]) == len(recs[2]["deals"]) and game["names"] == ["random"] * 4
    for d, src in zip(game["deals"], recs[2]["deals"], strict=True):
        assert len(d["frames"]) == len(d["moves"]) + 1 == len(src["moves"]) + 1
        assert [m["move"] for m in d["moves"]] == src["moves"]
        assert d["score"]["totals"] == src["points"]
        assert all(h is not None for h in d["frames"][0]["hands"])  # every hand face up
    assert client.get(f"/api/records/{listed['id']}/4").status_code == 404
    assert client.get("/api/records/nope/1").status_code == 404
    for n in ("9" * 5000, "x", "-1", "0"):  # 5000 digits was a 500
        r = client.get(f"/api/records/{listed['id']}/{n}")
        assert r.status_code == 404 and r.json()["error"].startswith("game: expected"), (n, r.text)
    # a bad file: the error names the game (its line); a record whose move is illegal fails when it is opened
    bad = client.post("/api/records", content=(text + "{oops\n").encode())
    assert bad.status_code == 400 and bad.json()["error"].startswith("game 4 (line 4): not valid JSON")
    recs[1]["deals"][0]["moves"][2] = {"action": "trail", "card": recs[1]["deals"][0]["moves"][3]["card"]}
    rid = client.post("/api/records", content="".join(json.dumps(r) + "\n" for r in recs).encode()).json()["id"]
    r = client.get(f"/api/records/{rid}/2")
    assert r.status_code == 400 and r.json()["error"].startswith("game 2, deal 1, move 3 ")


def test_a_game_too_long_for_the_viewer_is_refused_when_opened(client: TestClient) -> None:
    """A 64 MiB file can hold one game of some 10,000 deals (a huge target): replaying it with every position made
    one answer of hundreds of megabytes."""
    from train.serve import MAX_VIEWER_DEALS

    rec = random_record(make_rules("classic"), seed=1, play="match")
    rec["deals"] = rec["deals"] * (MAX_VIEWER_DEALS // len(rec["deals"]) + 1)
    r = client.post("/api/records", content=(json.dumps(random_record(make_rules("classic"), seed=2)) + "\n" +
                                             json.dumps(rec) + "\n").encode())
    assert r.status_code == 413 and r.json()["error"].startswith(f"game 2: {len(rec['deals'])} deals; the viewer")


def test_an_opened_record_file_is_kept_as_text_not_parsed() -> None:
    """The viewer kept every game of every open file parsed: about 8 times the file's size, so 8 files of the
    64 MiB limit held some 4 GB. It keeps the file's text (and parses one game when it is asked for)."""
    import tracemalloc

    recs = [json.dumps(random_record(make_rules("classic"), seed=s, play="match")) for s in range(10)]
    text = "".join(recs[i % 10] + "\n" for i in range(400))
    server = Server()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        rid, listed = server.open_records(text)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(listed) == 400 and kept < 2 * len(text), (kept, len(text))
    game = server.replayed(rid, 13)
    assert game["game"] == 13 and [d["score"]["totals"] for d in game["deals"]] == \
        [d["points"] for d in json.loads(recs[2])["deals"]]


def test_the_page_and_its_files(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for name in ("app.js", "style.css"):
        assert f"/static/{name}" in page.text
        assert client.get(f"/static/{name}").status_code == 200
        assert (WEB_DIR / name).is_file()
    assert client.get("/static/nothing.js").status_code == 404
    options = client.get("/api/options").json()
    assert options["presets"]["bga"] == [2, 3, 4, 6] and "pretrained:classic" in options["agents"]


def test_serve_command_defaults_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    import inspect

    assert inspect.signature(main).parameters["host"].default == "127.0.0.1"  # localhost only by default
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["serve", "--port", "70000"])
    assert code == 2 and err.getvalue() == "error: port: expected 0..65535, got 70000\n"
    with contextlib.redirect_stderr(err):
        code = cli.main(["serve", "--host", "192.0.2.1", "--port", "0"])  # TEST-NET: not an address of this machine
    assert code == 2 and "cannot listen on 192.0.2.1" in err.getvalue()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(["serve", "--allow-agent", " ", "--port", "0"])
    assert code == 2 and err.getvalue() == "error: allow-agent: expected agent specs, got an empty one\n"


def test_serve_without_the_web_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "uvicorn", None)  # as if uvicorn were not installed
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main()
    assert code == 2 and err.getvalue().startswith("error: cassino serve needs the web extra: pip install ")


def test_cassino_serve_prints_its_address_and_serves_the_page() -> None:
    """The real command: `cassino serve --port 0` prints the address it listens on (localhost) and serves there."""
    import subprocess
    import sys
    import urllib.request

    code = "import sys; from train.cli import main; sys.exit(main(['serve', '--port', '0']))"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("Cassino is served at http://127.0.0.1:"), line + proc.stderr.read()
        url = line.split()[4]
        for _ in range(100):  # the address is printed just before uvicorn starts listening
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    page = r.read().decode()
                break
            except OSError:
                __import__("time").sleep(0.1)
        assert "<title>Cassino</title>" in page
        with urllib.request.urlopen(url + "api/options", timeout=5) as r:
            assert "pretrained:classic" in json.loads(r.read())["agents"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_web_files_are_package_data() -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")
    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert "web/*" in pyproject["tool"]["setuptools"]["package-data"]["train"]
    extras = pyproject["project"]["optional-dependencies"]
    assert "cassino-rl[web]" in extras["dev"] and any(d.startswith("starlette") for d in extras["web"])
