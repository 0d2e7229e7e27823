"""The web app in a real browser: Debian's chromium, headless, driven by Playwright (no browser download).

``cassino serve``'s app runs on a free localhost port in a thread; the test loads the page, plays a whole deal
against ``pretrained:classic`` by clicking moves, checks that the score shown equals the oracle's ``score_deal`` of
the deal replayed move by move from its seed, then opens the game's record in the viewer and steps through it.

Skipped, with the reason, only where chromium is not installed (``apt-get install -y chromium``); under CI
(``CI`` set, as .ci/run runs) a missing browser is a failure. ``CASSINO_SCREENSHOT=docs/screenshot_serve.png``
also saves a screenshot of the page in mid-deal (the picture of docs/web.md).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the web extra (pip install -e '.[web]') is not installed")
pytest.importorskip("playwright", reason="Playwright (the dev extra) is not installed")

import cassino_env  # noqa: E402
from cassino_env.rules import make_rules  # noqa: E402
from train.records import deal_position, replay  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: The deal's seed: above 2**53, so the page must pass it on without rounding it through a JavaScript number.
SEED = 2**53 + 2027
#: Chromium's switches for a root user on a closed network: no sandbox, no GPU, nothing fetched in the background.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed, and CI must run the browser test: .ci/run installs it with "
                        "apt-get install -y chromium")
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium), so the browser test cannot run")
    return CHROMIUM


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    import uvicorn

    from train.serve import create_app, free_port

    port = free_port("127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def page(chromium: str, tmp_path: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=chromium, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1180, "height": 900})
        context.set_default_timeout(180_000)  # generous: the first game may wait for the numba kernels to compile
        try:
            yield context.new_page()
        finally:
            context.close()


def wait_for_turn(page: Any) -> str:
    """Wait until the person is to move (with the moves shown) or the game is over; return the status."""
    page.wait_for_function("""() => {
        const s = document.getElementById('status').dataset.status;
        return s === 'game_over' || (s === 'your_turn' && !document.getElementById('moves-area').hidden);
    }""")
    return page.get_attribute("#status", "data-status")


def side_values(page: Any, selector: str) -> list[int]:
    return [int(x) for x in page.locator(f"{selector} td[data-side]").all_inner_texts()]


def test_play_a_deal_then_replay_it(page: Any, server_url: str, tmp_path: Path) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server_url + "/")
    page.wait_for_selector("#preset option[value='classic']", state="attached")
    # the defaults: one classic deal against pretrained:classic
    assert (page.input_value("#preset"), page.input_value("#opponent"), page.input_value("#play")) == \
        ("classic", "pretrained:classic", "deal")
    page.select_option("#preset", "classic")
    page.fill("#opponent", "pretrained:classic")
    page.select_option("#play", "deal")
    page.fill("#seed", str(SEED))
    page.select_option("#speed", "0")
    page.check("#show-probs")
    page.click("#start")

    clicks, saw_probs = 0, False
    page.wait_for_selector("#game", state="visible")
    assert page.inner_text("#start") == "New game" and page.is_enabled("#start")  # no longer "Dealing…"
    screenshot = os.environ.get("CASSINO_SCREENSHOT")  # taken once: a build on the table, or late in the deal
    while wait_for_turn(page) == "your_turn":
        assert page.locator("#board .seat.me .hand .card").count() > 0  # your hand is shown
        saw_probs = saw_probs or page.locator("#probs li").count() > 0
        if screenshot and clicks >= 4 and (page.locator("#board .build").count() or clicks == 20):
            page.screenshot(path=screenshot, full_page=True)
            screenshot = None
        buttons = page.locator("#moves button.move")
        n = buttons.count()
        assert n > 0
        buttons.nth(clicks % n).click()  # a different move each turn, not always the first
        clicks += 1
        assert clicks <= 30, "a two-player classic deal gives the person 24 moves"
    assert clicks == 24 and saw_probs
    assert page.locator("#score").is_visible()
    shown_totals = side_values(page, "#score tr.total")
    shown_items = {row.locator("td").first.inner_text():
                   [int(x) for x in row.locator("td[data-side]").all_inner_texts()]
                   for row in page.locator("#score tr.item").all()}

    # The record of the game, replayed from its seed through the oracle, move by move.
    href = page.get_attribute("#download", "href")
    text = page.request.get(server_url + href).text()
    record = json.loads(text)
    assert record["seats"] == ["human", "pretrained:classic"] and record["seed"] == SEED  # exact, past 2**53
    moves = record["deals"][0]["moves"]
    pos = deal_position(make_rules("classic"), SEED, 0, 0)
    for move in moves:
        assert move in cassino_env.legal_moves(pos)
        pos = cassino_env.apply_move(pos, move)
    tally = cassino_env.score_deal(pos)
    assert shown_totals == tally["totals"]
    assert shown_items == {item.replace("_", " "): [side[item] for side in tally["items"]]
                           for item in tally["items"][0]}
    assert page.locator("#log li").count() == len(moves) == 48

    # The viewer: open the record file and step through it.
    path = tmp_path / "game.jsonl"
    path.write_text(text, encoding="utf-8")
    page.click("#tab-replay")
    page.set_input_files("#record-file", str(path))
    page.wait_for_selector("#replay", state="visible")
    assert page.inner_text("#r-where").startswith(f"move 0 of {len(moves)} ")
    game = replay(record, 1, positions=True).deals[0]
    for i in range(1, 4):
        page.click("#r-next")
        assert page.inner_text("#r-where").startswith(f"move {i} of {len(moves)} ")
    loose = page.locator("#replay-board .loose .card").evaluate_all("els => els.map(e => e.dataset.card)")
    assert loose == game.positions[3]["loose"]
    hands = page.locator("#replay-board .seat[data-seat='1'] .hand .card").evaluate_all(
        "els => els.map(e => e.dataset.card)")
    assert hands == game.positions[3]["hands"][1]  # every hand face up in the viewer
    page.click("#r-prev")
    assert page.inner_text("#r-where").startswith(f"move 2 of {len(moves)} ")
    page.click("#r-last")
    assert page.inner_text("#r-where").startswith(f"move {len(moves)} of {len(moves)} ")
    assert page.locator("#replay-score").is_visible()
    assert side_values(page, "#replay-score tr.total") == tally["totals"]
    assert errors == []


def test_the_first_screen_says_what_to_do_and_has_the_default_game_dealt(page: Any, server_url: str) -> None:
    """The first screen was a bare settings bar: now a welcome line, the agents' pace spelled out, and the default game
    dealt in the background on load, so "New game" with the settings unchanged sends no deal of its own (the first
    deal, which loads the network, took seconds after the click)."""
    posts: list[tuple[float, str]] = []
    page.on("request", lambda r: posts.append((time.monotonic(), r.url))
            if r.method == "POST" and r.url.endswith("/api/games") else None)
    page.goto(server_url + "/")
    assert "New game" in page.inner_text("#welcome")
    assert "pace" in page.inner_text("label:has(#speed)")
    assert "0.5 s a move" in page.locator("#speed option:checked").inner_text()
    page.wait_for_function("() => document.querySelectorAll('#preset option').length > 0")
    page.wait_for_timeout(200)
    assert len(posts) == 1  # dealt ahead, before any click
    clicked = time.monotonic()
    page.select_option("#speed", "0")
    page.click("#start")
    page.wait_for_selector("#game", state="visible")
    assert [t for t, _ in posts if t >= clicked] == []  # the game shown is the one dealt ahead
    assert page.inner_text("#start") == "New game" and page.inner_text("#dealing-note") == ""
    if os.environ.get("CASSINO_FIRST_SCREEN"):
        page.goto(server_url + "/")
        page.wait_for_function("() => document.querySelectorAll('#preset option').length > 0")
        page.screenshot(path=os.environ["CASSINO_FIRST_SCREEN"], full_page=True)
