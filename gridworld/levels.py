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

DETOUR = (
    "####################",
    "#......#...........#",
    "#..b...#...........#",
    "#......#...........#",
    "#......#......T....#",
    "###A####...........#",
    "#SSS...B...........#",
    "#SaS...#...........#",
    "#SSS...#...........#",
    "####################",
)
"""Two keys, three rooms, 20x10, a star: the start room's green key opens a side room above it holding the
purple key, and the purple passageway, in the start room's own wall, opens the large room with the target. The
way to the target is a detour: up through A, back down, then through B. A uniformly random walk of 100 steps
enters the target's room in about 1 episode in 700, and under pretraining's protocol never in 256k steps
(gridworld/README.md, "The held-out levels")."""

FORK = (
    "######################",
    "#SSSS#.........#.....#",
    "#SaSS#.........#.....#",
    "#SSbSA.........B.....#",
    "#SSSS#.........#..T..#",
    "#....#.........#.....#",
    "#....#.........#.....#",
    "###B##################",
    "#....................#",
    "#....................#",
    "#....................#",
    "######################",
)
"""Two keys, four rooms, 22x12, a fork: both keys lie in the start room; the green passageway opens a room
to the east, whose purple passageway opens the target's room; the purple passageway in the start room's floor
opens a long room below. Neither key needs the other, so the two side rooms each take one key and the target's
room both."""

HELD_OUT: dict[str, tuple[str, ...]] = {"detour": DETOUR, "fork": FORK}
"""Key levels held out for the pre-registered test of the task-family study
(docs/preregistration/held_out.md): other room graphs and key placements than easy, hard and deep, on which
no method was run before that protocol was committed."""

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
