# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02a · VISR: a task is a direction w, found by least squares
#
# Notebook 02 pretrained VISR without reward: features φ(s') on the unit sphere and one skill per
# direction w, the greedy policy on ψ(s, a, w)ᵀw. Here a task arrives, as a reward, and must become a
# direction w before any skill can serve it. If the reward were linear in the features, r(s') = φ(s')ᵀw,
# the skill w would be the task's policy; so the agent collects rewards with its skills and fits w by least
# squares. (Symbols as in notebook 01's notation table.)
#
# **After this notebook you can**
#
# * write the task regression yourself;
# * recognise its reversed version, a bug of public code that recovers the wrong w, and say by how much it
#   bends w on correlated features;
# * read the identification data of each level (which rewards the skills reached) and the R² of the fit,
#   and say why a small R² is no verdict on w.
#
# **How long.** About 46 minutes of study: reading what it says and prints, predictions, the exercise, and
# about 45 seconds of compute in its committed run, on a quiet 2-core CPU (it pretrains VISR on both levels
# again, as notebook 02 did). Notebook 02b then acts on each
# level's task with the identified w.

# %%
# On Colab, this installs the course's library at the release these notebooks were run with.
# Elsewhere it does nothing: install once from the repository instead (pip install -e .).
import sys

if "google.colab" in sys.modules:
    import subprocess
    from importlib.metadata import distributions

    class InstallFailed(Exception):
        def _render_traceback_(self):  # IPython shows this one line instead of a traceback
            return [str(self)]

    def versions():
        return {d.metadata["Name"].lower(): d.version for d in distributions()}

    before = versions()
    requirement = "aps-teach @ git+https://github.com/aps-teach/aps-teach@v0.1.0"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-color", requirement],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        said = [line for line in pip.stderr.splitlines() if line.strip()] or ["pip printed no error"]
        errors = [line for line in said if line.startswith("ERROR")] or said
        raise InstallFailed(f"aps-teach could not be installed from {requirement}: {errors[-1]}")
    upgraded = [f"{name} {before[name]} -> {new}" for name, new in versions().items()
                if before.get(name, new) != new]
    if upgraded:
        print("Upgraded preinstalled packages:", ", ".join(upgraded))
        print("Restart the runtime now (Runtime > Restart session), then run the notebook from the top.")

# %% tags=["parameters"]
import os
import time

from aps_teach.grid import experiments

FAST = os.environ.get("APS_TEACH_FAST") == "1"  # the test suite runs every notebook this way
# fast mode: one round of the 32 envs x 100 steps per phase (budgets are rounded up to whole rounds)
pretrain_steps = 3_200 if FAST else experiments.DEFAULT_PRETRAIN_STEPS  # reward-free env steps
identify_steps = 3_200 if FAST else experiments.DEFAULT_IDENTIFY_STEPS  # env steps of (phi, r) pairs
seed = 0
started = time.perf_counter()

# %%
import matplotlib.pyplot as plt
import torch

from aps_teach import course
from aps_teach.course import exercises
from aps_teach.grid import transfer
from aps_teach.grid.rollouts import oracle_task
from aps_teach.grid.train import TrainConfig, pretrain, task_data
from aps_teach.learner import tasks

course.fast_mode_banner(FAST)
config = TrainConfig(progress=not FAST)  # the library's defaults
levels = ["easy", "hard"]  # the paper's two levels
d = config.agent.feature_dim

# %% [markdown]
# The skills to be given a task: VISR pretrained on each level at the library's default budget, as in
# notebook 02 (the same seed, so the same agents).

# %%
learners = {level: pretrain("visr", level, pretrain_steps, seed, config)[0] for level in levels}
print(f"VISR pretrained on {', '.join(levels)}: {pretrain_steps:,} reward-free env steps each, d = {d}")


# %% [markdown]
# ## Task inference by least squares
#
# *About 38 minutes.*
#
# A new task arrives as a reward, here the level's +1 per key and +10 at the target. If it were
# linear in the features, r(s') = φ(s')ᵀw, then Q(s, a, w) = ψ(s, a, w)ᵀw would be that task's
# value. So collect N transitions (the pretrained skills with random w), stack the rows φ(s') into
# Φ (N × d) and the rewards into r, and solve
#
# $$w^\star = \arg\min_w \lVert \Phi w - r \rVert^2, \qquad w = w^\star / \lVert w^\star \rVert.$$
#
# The length of w changes no greedy policy, and the skills were trained on unit w.
#
# ### Exercise: write `infer_task`
#
# Write `my_infer_task(features, rewards)`: `features` (N, d) and `rewards` (N,) are torch tensors;
# return the unit vector w (d,). `torch.linalg.lstsq` solves least squares. The checker compares
# your function with the library's on random inputs with correlated features, names the mistake
# when it recognises it, and the cells below use the library's answer until yours is right.
# After a wrong attempt, `my_infer_task(*exercises.failing_case("infer_task"))` calls yours on the inputs
# it got wrong; once you have tried, `exercises.solution("infer_task")` shows a solution.

# %%
def my_infer_task(features, rewards):
    raise NotImplementedError  # your code here


infer_task = exercises.check_infer_task(my_infer_task)

# %% [markdown]
# ### The reversed regression
#
# Public code has solved this regression the other way round, `lstsq(r, Φ)`: rewards as the
# design matrix, features as the targets. That minimises ‖r bᵀ − Φ‖ over b, whose solution is
#
# $$b = \frac{\Phi^\top r}{r^\top r}
#   \;\approx\; \frac{(\Phi^\top \Phi)\, w}{r^\top r} \quad\text{when } r \approx \Phi w:$$
#
# the true w bent by the features' second-moment matrix ΦᵀΦ. Only when ΦᵀΦ is a multiple of the
# identity (uncorrelated features of equal scale) is that the right direction. On synthetic data
# with a known w:
#
# **Predict.** With features mixed to be strongly correlated, will the reversed regression's w still be
# close to the true one (a cosine near 1)?

# %%
def reversed_task(features, rewards):
    """The bug: regress the features on the rewards, lstsq(r, Phi), and normalise."""
    b = torch.linalg.lstsq(rewards.double()[:, None], features.double()).solution[0]
    return b / b.norm()


generator = torch.Generator().manual_seed(seed)
w_true = tasks.sample_tasks(1, d, generator)[0].double()
mixing = torch.eye(d, dtype=torch.float64) + 0.8 * torch.ones(d, d, dtype=torch.float64)
raw = torch.randn(2000, d, generator=generator, dtype=torch.float64)
for name, features in {"uncorrelated": raw, "correlated": raw @ mixing}.items():
    noisy = features @ w_true + 0.1 * torch.randn(2000, generator=generator, dtype=torch.float64)
    right, wrong = infer_task(features, noisy), reversed_task(features, noisy)
    bent = features.T @ features @ w_true
    print(f"{name:>12} features: cos(w_true, infer_task) = {float(right @ w_true):.4f} | "
          f"cos(w_true, reversed) = {float(wrong @ w_true):.4f} | "
          f"cos(reversed, Phi^T Phi w_true) = {float(wrong @ bent / bent.norm()):.4f}")

# %% [markdown]
# Now the real thing. `train.task_data` rolls out the pretrained skills on the level with its
# reward switched on and returns (Φ, r). As a reference, `rollouts.oracle_task` fits w on *perfect*
# data: every transition of the level once, the +10 included. `transfer.fit_task` gives the R² of
# the fit, the fraction of the rewards' variance that φ(s')ᵀw explains.
#
# **Predict.** Will the hard level's identification data hold any +10 reward? Which regression will land
# closer to the oracle's w?

# %%
identified, tens, cosines = {}, {}, {}  # tens: +10 rewards in each level's identification data
oracles = {level: oracle_task(learners[level], level) for level in levels}
for level in levels:
    features, rewards_seen = task_data(learners[level], level, identify_steps, seed, config)
    values, counts = torch.unique(rewards_seen, return_counts=True)
    tens[level] = int((rewards_seen == 10).sum())
    print(f"{level}: {len(rewards_seen)} transitions, rewards seen "
          f"{dict(zip(values.tolist(), counts.tolist(), strict=True))}")
    if not rewards_seen.any():
        print("  no reward at all in the identification data: nothing to regress, w drawn at random")
        identified[level] = transfer.fit_task(features, rewards_seen, seed).w
        continue
    identified[level] = w = infer_task(features, rewards_seen)
    moments = torch.linalg.eigvalsh(features.T.double() @ features.double() / len(features))
    wrong_w = reversed_task(features, rewards_seen).float()
    right, wrong = float(w @ oracles[level]), float(wrong_w @ oracles[level])
    cosines[level] = {"infer_task": right, "reversed": wrong}
    r2 = transfer.fit_task(features, rewards_seen, seed).r2
    ratio = float(moments.max() / moments.min())
    print(f"  eigenvalues of Phi^T Phi / N from {moments.min():.4f} to {moments.max():.4f} (ratio "
          f"{ratio:,.0f}: far from equal, above 10: {ratio > 10}) | R^2 of the fit {r2:.3f}")
    print(f"  cos(oracle, infer_task) = {right:.3f} | cos(oracle, reversed) = {wrong:.3f}")
    print(f"  the reversed regression lands further from the oracle's w than infer_task: {wrong < right} "
          f"(by {right - wrong:.3f} in cosine)")
d = len(oracles[levels[0]])
print(f"for scale: a random unit direction in d = {d} dimensions has cos about +-1/sqrt(d) = "
      f"+-{1 / d ** 0.5:.2f} with the oracle's w")

fig, ax = plt.subplots(figsize=(6, 3))
for offset, (name, colour) in zip((-0.2, 0.2), (("infer_task", "tab:blue"), ("reversed", "tab:red")),
                                  strict=True):
    ax.bar([i + offset for i in range(len(cosines))], [c[name] for c in cosines.values()], 0.4,
           color=colour, label=name)
ax.set_xticks(range(len(cosines)), list(cosines))
ax.axhline(1, color="black", linewidth=0.8)
ax.set_ylabel("cos(w, the oracle's w)")
ax.set_title("How close each regression lands to the oracle's w")
ax.legend()
plt.show()

# %% [markdown]
# Read the reward counts first: the data hold only what the pretrained skills reach under random
# w, so the +10 appears only if some skill walks to the target. A small R² is no verdict on w: the rewards
# are a few spikes (+1 at a key, +10 at the target) among thousands of zeros, which no linear φ(s')ᵀw can
# reproduce state by state. Acting greedily needs less, only the right *order*: the target must score
# above every other state, which notebook 02b counts. Where the eigenvalues of ΦᵀΦ / N are
# far from equal (a ratio above 10), these features are correlated like the synthetic ones, and the last
# line of each level says whether the reversed regression paid for it here, and how much. Read the cosines
# against the last line: a direction drawn at random would land near 0, within about a quarter either side.
#
#
# ## What this run found
#
# *About 1 minute.*

# %%
for level in levels:
    print(f"{level:>5}: +10 rewards in the identification data {tens[level]} | cos(oracle, identified w) "
          f"{float(identified[level] @ oracles[level]):.3f}")
print(f"whole notebook: {time.perf_counter() - started:.0f} s")

# %% [markdown]
# ## Summary
#
# *About 1 minute.*
#
# * A task is a direction w found by least squares, rewards regressed *on* the features:
#   $w \propto (\Phi^\top \Phi)^{-1} \Phi^\top r$, the rows of $\Phi$ the $\phi(s')$ of data paid $r$.
# * The reversed regression bends w by ΦᵀΦ: on the strongly correlated synthetic features it lands far off
#   the task; on VISR's learned features here it costs less: the cosine gaps printed above.
# * The data hold only what the skills reach under random w: a reward no skill walks to cannot be fitted.
#
# **Next.** Notebook 02b watches what single skills do, acts on each level's task with the identified w,
# zero-shot and then fine-tuned, beside the paper's Figure 4, and maps where VISR never went on the hard
# level. Notebook 02c gives VISR any task on any maze.
