"""``cassino play``: a person plays in the terminal, driven here by scripted input."""

from __future__ import annotations

import io
import subprocess
import sys

from cassino_env import core
from cassino_env.cards import card_id, card_text
from cassino_env.rules import make_rules
from cassino_env.vector import CassinoVectorEnv
from train.play import _why_illegal, draw, play_session


def session(lines: list[str], **kw) -> str:
    out = io.StringIO()
    assert play_session(kw.pop("opponent", "greedy"), "classic", inp=io.StringIO("".join(f"{x}\n" for x in lines)),
                        out=out, **kw) == 0
    return out.getvalue()


def first_hand(seed: int, seat: int = 0) -> list[int]:
    env = CassinoVectorEnv(1, "classic", seed=seed, episode="match")
    env.reset()
    return [c for c in range(52) if int(env.state.hand[0, seat]) >> c & 1]


def test_bad_input_is_answered_and_asked_again_then_the_deal_is_scored() -> None:
    hand = first_hand(3)
    text = session(["0", "99", "hello", "trail ZZ", f"trail {card_text(next(c for c in range(52) if c not in hand))}",
                    "#999", "?", f"trail {card_text(hand[0])}"] + ["1"] * 40, seed=3, deals=1)
    assert "no move 0: choose a number from 1 to" in text
    assert "no move 99" in text
    assert "not understood: 'hello' is not an action" in text
    assert "'ZZ' is not a card" in text
    assert "is not in the hand of seat 0 (docs/rules.md 2.2)" in text
    assert "no move #999" in text
    assert "capture 3C 5H with 8S" in text  # the help text
    assert f"you play: trail {card_text(hand[0])}" in text
    # the table is drawn before each turn, and the deal's score at its end
    assert "table:" in text
    assert "builds:" in text
    assert "hand:" in text
    assert "your moves:" in text
    assert "Deal 1 is over. Score:" in text
    for item in ("cards taken", "big casino", "little casino", "aces", "sweeps", "deal points", "match total"):
        assert item in text
    assert "Stopped after 1 deal." in text


def test_a_whole_match_to_the_end_and_quitting() -> None:
    text = session(["1"] * 400, seed=5, opponent="random")
    assert "The match is over:" in text
    text = session(["q"], seed=5)
    assert text.rstrip().endswith("Goodbye.")
    text = session([], seed=5)  # input ends
    assert "(end of input)" in text


def test_illegal_moves_get_the_rule_they_break() -> None:
    rules = make_rules("classic")
    c = card_id
    # docs/rules.md 7 case 4: table 7, hand 2 8: building 9 with the 2 is illegal (no 9 held).
    st = core.from_position(rules, hands=[[c("2C"), c("8D")], [c("3S")]], loose=[c("7H")])
    assert "docs/rules.md 4.1 rule 2" in _why_illegal(st, 2, c("2C"), 9, (c("7H"),))
    # docs/rules.md 7 case 7: you own build 3+4 of 7, a 10 is loose, hand 7 K 2: trailing the K is illegal.
    st = core.from_position(rules, hands=[[c("7C"), c("KD"), c("2H")], [c("3S")]], loose=[c("10H")],
                            builds=[([c("3C"), c("4D")], 7, 0)])
    assert "no_trail" in _why_illegal(st, 0, c("KD"), 0, ())
    # docs/rules.md 7 case 1: taking only the 8 with the 8 is legal but dominated, so it is not offered.
    st = core.from_position(rules, hands=[[c("8S")], [c("2C")]],
                            loose=[c(x) for x in ("AH", "2D", "3C", "5D", "6H", "8C")])
    assert "largest captures" in _why_illegal(st, 1, c("8S"), 8, (c("8C"),))


def test_typed_moves_and_the_drawing() -> None:
    # A deal whose first hand can capture: play the capture by text, naming the table cards or not.
    for seed in range(100):
        env = CassinoVectorEnv(1, "classic", seed=seed, episode="match")
        obs, _ = env.reset()
        caps = [i for i in range(int(obs["action_mask"][0].sum())) if obs["move_kind"][0, i] == core.CAPTURE]
        if caps:
            break
    i = caps[0]
    played = card_text(int(obs["move_card"][0, i]))
    taken = " ".join(card_text(x) for x in range(52) if int(obs["move_cards"][0, i]) >> x & 1)
    text = session([f"capture {taken.lower()} with {played.lower()}", "q"], seed=seed)
    assert f"you play: capture {taken} with {played}" in text
    text = session([f"capture with {played}", "q"], seed=seed)
    assert "you play: capture " in text
    # The drawing: table, builds with value and owner, the hand; suit symbols or ASCII.
    rules = make_rules("classic")
    st = core.from_position(rules, hands=[[card_id("8S"), card_id("KD")], [card_id("2C")]],
                            loose=[card_id(x) for x in ("AH", "2D", "3C", "5D", "6H", "8C")],
                            builds=[([card_id("4H"), card_id("5C")], 9, 1)])
    picture = draw(st, 0, "greedy")
    assert "hand:   [ K♦] [ 8♠]" in picture  # by card id
    assert "build of 9: 5♣ 4♥ · seat 1's" in picture
    assert "1 card in hand" in picture
    assert "[ 8S]" in draw(st, 0, "greedy", ascii_only=True)


def test_cli_play_with_piped_input(repo_root) -> None:
    result = subprocess.run([sys.executable, "-m", "train.cli", "play", "--opponent", "beginner", "--seed", "2",
                             "--deals", "1", "--ascii"], input="1\n" * 40, capture_output=True, text=True,
                            cwd=repo_root, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert "Deal 1 is over" in result.stdout
    assert "♠" not in result.stdout
    bad = subprocess.run([sys.executable, "-m", "train.cli", "play", "--opponent", "nobody"], input="",
                         capture_output=True, text=True, cwd=repo_root, timeout=300, check=False)
    assert bad.returncode == 2
    assert "unknown agent" in bad.stderr


def test_every_seat_and_four_players() -> None:
    out = io.StringIO()
    assert play_session("greedy", "classic", num_players=4, seat=2, seed=1, deals=1,
                        inp=io.StringIO("1\n" * 20), out=out) == 0
    text = out.getvalue()
    assert "seat 0 (greedy, your partner)" in text
    assert "Deal 1 is over" in text
    assert "seat 0+you" in text
    assert "seat 1+seat 3" in text


def test_the_picture_counts_in_words_and_states_the_match_score() -> None:
    """One spade is "1 spade", other counts plural; the match score reads "Match: you 12, seat 1 9 (to 21)"."""
    ids = [card_id(t) for t in ("8S", "2C", "AS", "3D", "4D", "KS", "QS")]
    rules = make_rules("classic")
    st = core.from_position(rules, hands=[[ids[0]], [ids[1]]], captured=[[ids[2], ids[3]], ids[4:]], to_move=0,
                            match_scores=[12, 9])
    picture = draw(st, 0, "greedy")
    assert "  Match: you 12, seat 1 9 (to 21)" in picture.splitlines()
    assert "you:    captured 2 (1 spade) · sweeps 0" in picture
    assert "seat 1 (greedy): 1 card in hand · captured 3 (2 spades)" in picture
    four = core.from_position(make_rules("classic", 4), hands=[[ids[0]], [ids[1]], [ids[5]], [ids[6]]], to_move=0)
    assert "  Match: you+seat 2 0, seat 1+seat 3 0 (to 21)" in draw(four, 0, "greedy").splitlines()
