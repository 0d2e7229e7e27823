"""Cicera's in-play point for taking, by pairing, the card just trailed (docs/rules.md 5.3), also under overrides.

With capture_mode=groups (or court_pair_take=all) a capture may take the trailed card as its own single-card group
(it is then necessarily taken by pairing: a card of value v can only be alone in a group of v) together with other
groups; the point is due then too.
"""

from __future__ import annotations

import cassino_env


def test_pairing_point_when_other_groups_are_taken_too():
    """docs/rules.md 5.3: 7H takes the just-trailed 7C by pairing, plus 3D+4S: pairing +1, three cards +1."""
    pos = {"rules": {"preset": "cicera", "capture_mode": "groups"}, "to_move": 1,
           "hands": [["2D"], ["7H", "9D"], ["3H"], ["4H"]], "loose": ["7C", "3D", "4S", "KH"], "last_trail": "7C"}
    after = cassino_env.apply_move(pos, {"action": "capture", "card": "7H", "take": ["7C", "3D", "4S"]})
    assert after["bonus_points"] == [0, 2, 0, 0]


def test_pairing_point_with_court_pair_take_all():
    """docs/rules.md 5.3 with court_pair_take=all: KH takes every loose K, the just-trailed KC among them: pairing
    +1."""
    pos = {"rules": {"preset": "cicera", "court_pair_take": "all"}, "to_move": 1,
           "hands": [["2D"], ["KH", "9D"], ["3H"], ["4H"]], "loose": ["KC", "KD", "5S"], "last_trail": "KC"}
    after = cassino_env.apply_move(pos, {"action": "capture", "card": "KH", "take": ["KC", "KD"]})
    assert after["bonus_points"] == [0, 1, 0, 0]
