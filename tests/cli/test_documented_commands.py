"""Every command README.md and the docs pages print, run: each code block's commands are extracted and run
in order, as a reader would, in a fresh folder, at the tiny budget `COMMANDS` gives each (flags appended
after the printed ones: the last value of a flag wins; the sweeps' runs tiny and in this process,
`conftest.in_process`). A command printed into a committed results folder that needs no new run there is run
as printed on a copy of that folder instead, with the library's own settings: it must skip every run and
rewrite the committed tables byte for byte. A printed command missing from `COMMANDS` fails the test, as does
an entry no page prints any more."""

import re
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aps_teach.cli.main import main
from tests.cli.conftest import TINY_FLAGS, files
from tests.cli.test_commands import ATARI_TINY, summary

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "docs" / "preregistration").glob("*.md"))]
"""The pages whose commands are run: the README, the docs pages and the pre-registrations."""
OTHER_TOOLS = ("pip", "pytest", "mkdocs", "ray", "export", "conda")
"""Commands of other tools the pages print (installing, testing, serving the site, starting Ray): not run."""
SHELLS = ("bash", "sh", "shell", "console")
"""Code blocks whose every line is a command; in a block without a language only `$ ` lines are."""


WORDS: dict[str, list[str]] = {}
"""A printed command's text (its words joined by spaces, as `COMMANDS` names it) -> its words."""


def page_commands() -> dict[tuple[str, ...], list[str]]:
    """Each code block's commands of this package, in order (a block's tuple of commands -> the pages and
    blocks printing it), every command as its words joined by spaces (`WORDS` keeps the words); a command of
    a tool neither this package's nor `OTHER_TOOLS` fails."""
    blocks: dict[tuple[str, ...], list[str]] = {}
    for page in PAGES:
        for number, found in enumerate(re.finditer(r"^```(\w*)\n(.*?)^```", page.read_text(),
                                                   re.DOTALL | re.MULTILINE)):
            language, body = found.groups()
            lines = body.replace("\\\n", " ").splitlines()
            if language not in SHELLS:
                lines = [line[2:] for line in lines if line.startswith("$ ")]
            commands = []
            for line in lines:
                words = [word.removeprefix("$") for word in shlex.split(line, comments=True)]
                while words:
                    command, words = (words[:words.index("&&")], words[words.index("&&") + 1:]) \
                        if "&&" in words else (words, [])
                    command = [word for word in command if word]
                    if not command:
                        continue
                    text = " ".join(command)
                    if command[0] == "aps-teach" or text.startswith(("python -m aps_teach", "python -c")):
                        commands.append(text)
                        WORDS[text] = command
                    else:
                        assert command[0] in OTHER_TOOLS, f"{page.name}: a command of an unknown tool: {text}"
            if commands:
                blocks.setdefault(tuple(commands), []).append(f"{page.relative_to(ROOT)}#{number}")
    return blocks


@dataclass
class Tiny:
    """How a printed command runs here: `extra`, the tiny budget (flags after the printed ones; for
    `python -c`, keyword arguments that replace its call's, as Python source); `copy`, committed results
    folders copied in first (the command then runs as printed there and must rewrite them byte for byte);
    the exit status expected and a line its error must hold; the runs it completes (None: not a sweep);
    `check`, more of what it wrote."""

    extra: list[str] = field(default_factory=list)
    copy: tuple[str, ...] = ()
    status: int = 0
    error: str = ""
    completed: int | None = None
    check: Callable[[Path, str], None] | None = None


BUDGET = ["--pretrain-steps", "200", "--finetune-steps", "200", "--identify-steps", "200", "--eval-episodes",
          "2"]
"""One round of 2 envs x 100 steps per phase (with TINY_FLAGS or `tiny_learners`), two greedy episodes."""
FAMILY = ["--identify-steps", "200", "--finetune-steps", "200", "--eval-episodes", "2", "--tasks",
          "one per class", "--seeds", "2"]
"""A task-family run's tiny budget besides pretraining: one task per class, two seeds."""
STUDY_GRID = ["--grid.methods", "visr", "--grid.levels", "easy", "--grid.mazes", "open10",
              "--grid.pretrain-steps", "200", "--grid.feature-dims", "16", "--grid.identify-steps", "200",
              "--grid.gammas", "--grid.seeds", "1", "--grid.finetune-steps", "200", "--grid.eval-episodes",
              "2", "--grid.transfer-tasks", "2",
              "--grid.transfer-episodes", "2", "--grid.arm-pretrain-steps", "200",
              *(flag.replace("--train.", "--grid.train.") for flag in TINY_FLAGS)]
"""The budget study's grid at its smallest: VISR on easy and open10, one budget, one seed."""
NO_RAY = "--ray-address auto found no Ray cluster this machine has joined: start one with `ray start --head`"


def check_quickstart(root: Path, out: str) -> None:
    lines = out.splitlines()
    assert re.fullmatch(r"aps on easy, seed 0: pretraining \d+ s, coverage [\d.]+, target reached: \w+",
                        lines[0])
    assert lines[-1] == ("wrote runs/quickstart/ (checkpoints, metrics, summary.json) and "
                         "runs/quickstart/overview.png")
    assert (root / "runs" / "quickstart" / "summary.json").is_file()


def check_demo(root: Path, out: str) -> None:
    assert [line.split(":")[0] for line in out.splitlines()] == ["easy", "hard", "deep",
                                                                 "wrote runs/demo/gridworlds.png"]
    assert (root / "runs" / "demo" / "gridworlds.png").read_bytes()[:4] == b"\x89PNG"


def check_run(method: str) -> Callable[[Path, str], None]:
    def check(root: Path, out: str) -> None:
        said = summary(out)
        assert (said["method"], said["level"], said["seed"]) == (method, "easy", "0")
        assert 0 <= float(said["finetuned_success"]) <= 1
        assert (root / "runs" / "visr-easy-0" / "summary.json").is_file()
    return check


def check_axis(budgets: list[str]) -> Callable[[Path, str], None]:
    def check(root: Path, out: str) -> None:
        from aps_teach.infra.sweeps import read_rows

        axis = read_rows(root / "results" / "task_families_budget" / "budget_axis.csv")
        assert sorted({row["pretrain_steps"] for row in axis}, key=int) == budgets
        assert {row["seeds"] for row in axis} == {"2"}
    return check


def check_finetune(root: Path, out: str) -> None:
    from aps_teach.infra.sweeps import read_rows
    from aps_teach.studies.finetune import COLUMNS, METHOD_ARMS

    rows = read_rows(root / "runs" / "finetune" / "finetune.csv", COLUMNS)
    assert {row["arm"] for row in rows} == set(METHOD_ARMS["visr"]) and {row["seed"] for row in rows} == {"0"}


def check_help(root: Path, out: str) -> None:
    assert "--device STR" in out
    assert all(f"aps-teach {name}" in out for name in ("demo", "gridworld", "atari"))


def check_times(root: Path, out: str) -> None:
    assert "00_gridworlds" in out and "08_appendix" in out and "min" in out


COMMANDS: dict[str, Tiny] = {
    # README.md
    "aps-teach": Tiny([*BUDGET, *TINY_FLAGS], check=check_quickstart),
    "aps-teach --help": Tiny(check=check_help),
    "aps-teach demo": Tiny(["--episodes", "5", "--no-progress"], check=check_demo),
    "aps-teach gridworld run --out runs/visr-easy-0 --method visr --level easy --seed 0":
        Tiny([*BUDGET, *TINY_FLAGS], check=check_run("visr")),
    "aps-teach gridworld sweep --methods visr apt aps dqn --levels easy hard deep --seeds 10":
        Tiny(["--methods", "visr", "--levels", "easy", "--seeds", "1", *BUDGET], completed=1),
    "aps-teach gridworld transfer --method aps --maze open10 --tasks 20 --seeds 5":
        Tiny(["--tasks", "2", "--seeds", "1", "--pretrain-steps", "200", "--identify-steps", "200",
              "--eval-episodes", "2", *TINY_FLAGS]),
    "aps-teach atari run --out runs/pong-aps --game Pong --method aps --device cuda":
        Tiny([*ATARI_TINY, "--device", "cpu"]),
    "python -m aps_teach.course.build --times": Tiny(check=check_times),
    # docs/command-line.md
    "aps-teach gridworld run --out runs/visr-easy-0 --method visr --level easy --seed 0 --train.no-progress":
        Tiny([*BUDGET, *TINY_FLAGS], check=check_run("visr")),
    # docs/development.md: the notebook executed in fast mode into a copy (`run_command`)
    "python -m aps_teach.course.build 00_gridworlds": Tiny(),
    # docs/results.md
    "aps-teach gridworld sweep --methods visr apt aps dqn --levels easy hard deep --seeds 10 --out "
    "results/gridworld": Tiny(copy=("gridworld",), completed=0),
    "aps-teach gridworld transfer --method aps --maze open10 --tasks 20 --seeds 5 --out results/transfer":
        Tiny(["--tasks", "2", "--seeds", "1", "--pretrain-steps", "200", "--identify-steps", "200",
              "--eval-episodes", "2", *TINY_FLAGS]),
    # docs/studies.md
    "aps-teach gridworld study --out runs/study --grid.train.finetune-epsilon-start 0.05 "
    "--grid.finetune-epsilons 0.3": Tiny(STUDY_GRID, completed=3),
    "python -c from aps_teach.studies.finetune import run_finetune_study; run_finetune_study(num_seeds=10, "
    "out_dir='runs/finetune')":
        Tiny(["methods=('visr',)", "num_seeds=1", "progress=False", "budget=Budget(pretrain_steps=200, "
              "finetune_steps=200, identify_steps=200, eval_episodes=2)"], check=check_finetune),
    "aps-teach gridworld parts --out results/aps_parts": Tiny(copy=("aps_parts",), completed=0),
    "aps-teach gridworld families --out results/task_families --levels easy hard deep --seeds 10":
        Tiny(["--levels", "easy", "--arms", "visr", "apt", "aps", "aps, kNN feature", "random",
              "--pretrain-steps", "200", "--protocols", "finetuned", *FAMILY], completed=10),
    "aps-teach gridworld families-budget --out results/task_families_budget --also results/task_families "
    "--pretrain-steps 256000 --seeds 10":
        Tiny(["--level", "easy", "--arms", "visr", "apt", "aps, kNN feature", "--pretrain-steps", "400",
              *FAMILY], completed=6, check=check_axis(["200", "400"])),
    "aps-teach gridworld families-budget --out results/task_families_budget --also results/task_families "
    "--pretrain-steps 1000000 --seeds 10":
        Tiny(["--level", "easy", "--arms", "visr", "apt", "aps, kNN feature", "--pretrain-steps", "600",
              *FAMILY], completed=6, check=check_axis(["200", "400", "600"])),
    "aps-teach gridworld zero-shot-loss --out results/zero_shot_loss --seeds 20 21 22 23 24 25 26 27 28 29":
        Tiny(copy=("zero_shot_loss",), completed=0),
    "aps-teach gridworld zero-shot --out results/zero_shot/deep --level deep --seeds 0 1 2 --workers 1":
        Tiny(copy=("zero_shot/deep",), completed=0),
    "aps-teach gridworld zero-shot --out results/zero_shot/detour --level detour --seeds 10 11 12 "
    "--workers 1":
        Tiny(copy=("zero_shot/detour",), completed=0),
    "aps-teach gridworld zero-shot --out results/held_out/fix_d64 --level detour --seeds 10 11 12 13 14 15 "
    "16 17 18 19 --feature-dim 64 --against results/held_out/detour-256k --reference "
    "results/zero_shot/detour":
        Tiny(copy=("held_out/fix_d64", "held_out/detour-256k", "zero_shot/detour"), completed=0),
    "aps-teach gridworld held-out --out results/held_out --workers 2": Tiny(copy=("held_out",), completed=0),
    "aps-teach atari compare --out results/atari/learning_check --contender dqn --baseline random":
        Tiny(copy=("atari/learning_check",)),
    # docs/sweeps.md: they need the Ray cluster the block before them starts; without one, one line
    "aps-teach gridworld sweep --executor ray --ray-address auto --methods visr apt aps dqn --levels easy "
    "hard deep --seeds 10": Tiny(status=2, error=NO_RAY),
    "aps-teach atari sweep --executor ray --ray-address auto --out results/atari26 --games atari26 --methods "
    "aps dqn --seeds 5 --device cuda --cpus-per-run 4 --atari.replay-capacity 1000000":
        Tiny(status=2, error=NO_RAY),
    # docs/preregistration/held_out_fix.md
    "aps-teach gridworld zero-shot --out results/held_out/fix_d64 --level detour --seeds 10 11 12 13 14 15 "
    "16 17 18 19 --feature-dim 64": Tiny(copy=("held_out/fix_d64",), completed=0),
}
"""Every command the pages print -> how it runs here."""

BLOCKS = page_commands()


def test_every_printed_command_has_its_tiny_budget_and_every_entry_is_printed():
    printed = {command for block in BLOCKS for command in block}
    missing = printed - set(COMMANDS)
    assert not missing, f"a page prints a command this test does not run: give it its tiny budget: {missing}"
    assert not set(COMMANDS) - printed, f"no page prints these any more: {set(COMMANDS) - printed}"


def run_command(text: str, plan: Tiny, monkeypatch, tmp_path: Path) -> int:
    """Run one printed command (its text) at its tiny budget in the current folder; its exit status."""
    words = WORDS[text]
    if words[0] == "aps-teach":
        try:
            return main([*words[1:], *plan.extra])
        except SystemExit as stop:  # --help
            return int(stop.code or 0)
    if words[:3] == ["python", "-m", "aps_teach.course.build"]:
        from aps_teach.course import build

        if words[3:] != ["--times"]:  # a notebook executed: in fast mode, into a copy of its source
            names, copies = words[3:], tmp_path / "notebooks"
            copies.mkdir()
            for name in names:
                shutil.copy(build.NOTEBOOK_DIR / f"{name}.py", copies / f"{name}.py")
            monkeypatch.setattr(build, "sources", lambda: [copies / f"{name}.py" for name in names])
            monkeypatch.setattr(build, "NOTEBOOK_DIR", copies)
            real = build.execute
            monkeypatch.setattr(build, "execute", lambda source, fast, **kwargs: real(source, True, **kwargs))
        return build.main([*words[3:], *plan.extra])
    import importlib

    from aps_teach.grid.experiments import Budget

    module, name = re.search(r"from (\S+) import (\w+)", words[2]).groups()  # the function the code calls
    real = getattr(importlib.import_module(module), name)
    tiny = eval(f"dict({', '.join(plan.extra)})", {"Budget": Budget})
    monkeypatch.setattr(importlib.import_module(module), name, lambda *args, **kwargs: real(*args, **{
        **kwargs, **tiny}))
    exec(compile(words[2], "<python -c>", "exec"), {"__name__": "__main__"})
    return 0


@pytest.mark.parametrize("block", list(BLOCKS), ids=["; ".join(pages) for pages in BLOCKS.values()])
def test_each_printed_block_runs_at_its_tiny_budget(block, tmp_path, monkeypatch, capsys, request):
    """The block's commands in order, in a fresh folder holding the pre-registrations and the committed
    results folders they are printed against."""
    if not all(COMMANDS[text].copy for text in block):
        request.getfixturevalue("in_process")
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "docs" / "preregistration", tmp_path / "docs" / "preregistration")
    for text in block:
        plan = COMMANDS[text]
        for name in plan.copy:
            if not (tmp_path / "results" / name).exists():
                shutil.copytree(ROOT / "results" / name, tmp_path / "results" / name)
        status = run_command(text, plan, monkeypatch, tmp_path)
        out, err = capsys.readouterr()
        assert status == plan.status, f"{text}: exit status {status}\n{err}"
        if plan.status:
            assert err.count("\n") == 1 and plan.error in err, err
            continue
        said = summary(out)
        if plan.completed is not None:
            assert int(said.get("completed", -1)) == plan.completed and said.get("failed", "0") == "0", out
        for key, value in said.items():  # the files it says it wrote
            if key in ("results", "figure", "hypotheses", "capping links", "fix verdicts", "fix by class",
                       "fix figure", "effects", "table", "coverage", "seed verdicts", "scores", "summary"):
                assert (tmp_path / value).exists(), (text, key, value)
        for name in plan.copy:  # run as printed on the committed folder: every table byte for byte
            committed, rewritten = files(ROOT / "results" / name), files(tmp_path / "results" / name)
            assert {path for path in rewritten if not Path(path).name.startswith(".")} == set(committed), name
            for path, data in committed.items():
                if path.endswith(".png"):
                    assert rewritten[path][:4] == b"\x89PNG", path
                else:
                    assert rewritten[path] == data, f"results/{name}/{path} is not rewritten byte for byte"
        if plan.check:
            plan.check(tmp_path, out)
