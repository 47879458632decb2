"""The key-passageway rules as a pycolab game: an agent sprite, key, passageway and target drapes."""

from __future__ import annotations

from pycolab import ascii_art, things
from pycolab.prefab_parts import sprites

from gridworld.layout import KEY_REWARD, KEYS, TARGET_REWARD, Layout, State

AGENT = "P"
"""The agent's character on pycolab's board; not part of the level legend."""


class Agent(sprites.MazeWalker):
    """Moves one cell per action (0 up, 1 down, 2 left, 3 right); walls and closed passageways block."""

    def __init__(self, corner, position, character, impassable: str):
        super().__init__(corner, position, character, impassable=impassable, confined_to_board=True)

    def update(self, actions, board, layers, backdrop, things, the_plot):
        if actions is None:
            return self._stay(board, the_plot)
        (self._north, self._south, self._west, self._east)[actions](board, the_plot)


class Key(things.Drape):
    """Picked up (+1, once) when the agent steps onto it."""

    def update(self, actions, board, layers, backdrop, things, the_plot):
        if self.curtain[things[AGENT].position]:
            self.curtain[:] = False
            the_plot.add_reward(KEY_REWARD)


class Passage(things.Drape):
    """Blocks the agent until its key has been picked up (key character = lower-case of its own)."""

    def update(self, actions, board, layers, backdrop, things, the_plot):
        if self.curtain.any() and not things[self.character.lower()].curtain.any():
            self.curtain[:] = False


class Target(things.Drape):
    """Pays +10 and ends the episode when the agent steps onto it."""

    def update(self, actions, board, layers, backdrop, things, the_plot):
        if self.curtain[things[AGENT].position]:
            the_plot.add_reward(TARGET_REWARD)
            the_plot.terminate_episode()


def build_game(layout: Layout, state: State):
    """A pycolab `Engine` for `layout` with the agent at `state`'s position holding its keys.

    A drape for each of the level's keys and passageways (and the target); walls and every passageway
    block the agent. The agent moves first, then keys, passageways and the target react to where it
    now stands.
    """
    (row, col), held = state
    removed = {"S"} | {char for name in held for char in KEYS[name]}
    grid = [["." if char in removed else char for char in line] for line in layout.art]
    grid[row][col] = AGENT
    keys = [KEYS[name][0] for name in layout.key_names]
    passages = [KEYS[name][1] for name in layout.key_names]
    return ascii_art.ascii_art_to_game(
        ["".join(line) for line in grid],
        what_lies_beneath=".",
        sprites={AGENT: ascii_art.Partial(Agent, "#" + "".join(passages))},
        drapes={**dict.fromkeys(keys, Key), **dict.fromkeys(passages, Passage), "T": Target},
        update_schedule=[AGENT, *keys, *passages, "T"],
    )
