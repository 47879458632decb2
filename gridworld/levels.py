"""The two key-passageway levels of the APS paper (Section 4.3, Figure 3), drawn in one place.

Legend (see `gridworld.layout.LEGEND`): '#' wall, '.' floor, 'S' start cell, 'a'/'A' green key and
its passageway, 'b'/'B' purple key and its passageway, 'T' target.
"""

EASY = (
    "##########",
    "#SSS#....#",
    "#SaS#....#",
    "#SSS#....#",
    "#...A....#",
    "#...#....#",
    "#...#..T.#",
    "#...#....#",
    "#...#....#",
    "##########",
)
"""One key: the green key in the start room opens the passageway to the room with the target."""

HARD = (
    "##########",
    "#SSS#..#T#",
    "#SaS#..#.#",
    "#SSS#..B.#",
    "#...A..###",
    "#...#....#",
    "#...#..b.#",
    "#...#....#",
    "#...#....#",
    "##########",
)
"""Two keys: the purple key behind the green passageway opens the upper-right room's passageway."""

LEVELS: dict[str, tuple[str, ...]] = {"easy": EASY, "hard": HARD}
