"""The key-passageway levels: the APS paper's two (Section 4.3, Figure 3) and one where exploration decides.

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

DEEP = (
    "####################",
    "#SSS#..............#",
    "#SaS#..............#",
    "#SSS#..............#",
    "#...A..........b...#",
    "#...#..............#",
    "#...#..............#",
    "##########B#########",
    "#..................#",
    "#..................#",
    "#............T.....#",
    "#..................#",
    "#..................#",
    "####################",
)
"""Two keys, three rooms, 20x14: the green key opens the large middle room, whose purple key opens the bottom
room with the target. Chosen by measurement (gridworld/README.md, "A level where exploration decides"): a
uniformly random walk covers under 60% of its states in the default pretraining budget and never enters the
bottom room, so a learner that explores at random does not find the target."""

LEVELS: dict[str, tuple[str, ...]] = {"easy": EASY, "hard": HARD, "deep": DEEP}

OPEN10 = ("#" * 12, *["#" + "S" * 10 + "#"] * 10, "#" * 12)
"""An open 10x10 room; episodes start anywhere. No keys, no target: for reward-map tasks."""

FOURROOM = (
    "############",
    "#SSSS#SSSSS#",
    "#SSSS#SSSSS#",
    "#SSSSSSSSSS#",
    "#SSSS#SSSSS#",
    "##S###SSSSS#",
    "#SSSS###S###",
    "#SSSS#SSSSS#",
    "#SSSSSSSSSS#",
    "#SSSS#SSSSS#",
    "#SSSS#SSSSS#",
    "############",
)
"""A 10x10 four-room maze (doorways between neighbouring rooms); episodes start anywhere. For
reward-map tasks."""

MAZES: dict[str, tuple[str, ...]] = {"open10": OPEN10, "fourroom": FOURROOM}
"""Target-free mazes: they take a `reward_map` task instead of the key/target protocol."""
