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
# # 04 · APS: one set of features that explores and exploits
#
# APS (Liu & Abbeel, ICML 2021) joins the two methods of the previous notebooks. It maximises the
# mutual information between states and tasks written as $I(s; w) = H(s) - H(s \mid w)$, where VISR
# wrote $H(w) - H(w \mid s)$, and pays each term with something you have built: $H(s)$ with APT's
# k-nearest-neighbour particle reward, $-H(s \mid w)$ with VISR's von Mises–Fisher reward
# $\phi(s')^\top w$, both on the same features $\phi$. Its policy is VISR's, $\psi(s, a, w)^\top w$, and a
# task is read off rewards by least squares. (Symbols as in notebook 01's notation table.)
#
#
# **What you will be able to do.** Say which parts APS takes from VISR and which from APT; decide the
# paper's three claims about its Figure 4 from the committed sweep; say what each way of writing
# $I(s; z)$ rewards; derive the bound on $-H(s \mid z)$ and the von Mises–Fisher step to
# $\phi(s)^\top w$; place APS in the paper's Table 1; write APS's reward as the paper's equations and the
# n-step successor-feature TD target yourself; run Algorithm 1 in ten lines against the library, and say
# where the library departs from it and why.
#
# **How long.** About 60 minutes of study, counted as the README's course table says: one function to
# write and seconds of compute. Notebook 04a then puts APS on the grid: both reward terms as heatmaps,
# your own seed of Figure 4, and GPI at work.

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

FAST = os.environ.get("APS_TEACH_FAST") == "1"  # the test suite runs every notebook this way
seed = 0
learning_starts = 400 if FAST else 1_600  # env steps before the first update (the library's: 1600)
notebook_start = time.perf_counter()

# %%
from aps_teach import course

course.fast_mode_banner(FAST)

# %%
import copy

import matplotlib.pyplot as plt
import numpy as np
import torch

import gridworld
from aps_teach.course import exercises, schematic
from aps_teach.grid import plots
from aps_teach.grid.train import TrainConfig, pretrain
from aps_teach.infra.stats import VERDICTS, beats, claim_verdict, summarise
from aps_teach.infra.sweeps import read_rows
from aps_teach.learner.rewards import intrinsic_reward, particle_entropy_reward, vmf_reward
from aps_teach.learner.tasks import sample_tasks

config = TrainConfig(progress=False, learning_starts=learning_starts)
levels = ("easy", "hard")

# %% [markdown]
# **APS's parts, and what flows between them.** Each box is a part of a method, coloured by the method
# it comes from; each arrow is what one part hands to another. APS keeps all of VISR's blue parts and
# takes APT's green kNN term, computed on $h = \phi(s')$ instead of APT's own encoder $f$; its reward is
# the sum of the two terms, which this notebook derives.

# %%
fig = schematic.data_flow()
plt.show()

# %% [markdown]
# ## The committed Figure 4, and the paper's three claims
#
# `results/gridworld/figure4.csv`, shipped with the package, holds the repository's reproduction of the
# paper's Figure 4 (`aps-teach gridworld sweep`, 10 seeds): each run pretrained reward-free, identified its
# task, was evaluated zero-shot, then fine-tuned on the task reward and evaluated again (DQN: no
# pretraining). The cell prints each method's success with its 95% bootstrap interval over seeds and
# decides each claim by the course's one rule (`stats.beats`, as in 03b and 07): A *beats* B on a level
# when A's interval lies wholly above B's in zero-shot or fine-tuned success, and wholly below in neither.
# Where all the methods of a claim score 0, there is nothing to decide (`stats.claim_verdict`).
#
# **Predict:** the paper says VISR beats APT on the easy level, APT beats VISR on the hard one, and APS is
# best on both. Which of the three do you expect a 10-seed reproduction to confirm?

# %%
file_rows = read_rows(course.committed_result("gridworld/figure4.csv"))
success = summarise(file_rows, by=("method", "level", "phase"), value="success_rate")
file_hashes = sorted({row["config_hash"] for row in file_rows})
file_seeds = max(n for (*_, phase), (*_, n) in success.items() if phase == "finetuned")  # one row a run
print(f"figure4.csv: {len(file_rows)} rows, {file_seeds} seeds, configuration hash {', '.join(file_hashes)}")
print(f"{'method':<6} {'level':<5} | {'zero-shot success':<18} | fine-tuned success")
for method in ("visr", "apt", "aps", "dqn"):
    for level in levels:
        shown = [f"{m:.2f} [{lo:.2f}, {hi:.2f}]" for phase in ("zero_shot", "finetuned")
                 for m, lo, hi, _ in [success[method, level, phase]]]
        print(f"{method:<6} {level:<5} | {shown[0]:<18} | {shown[1]}")


def columns(method: str, level: str) -> list[tuple[float, float]]:
    """method's 95% intervals (low, high) in zero-shot and in fine-tuned success on level."""
    return [success[method, level, phase][1:3] for phase in ("zero_shot", "finetuned")]


def beats_on(a: str, b: str, level: str) -> bool:
    return beats(columns(a, level), columns(b, level))


def verdict(holds: bool, methods: tuple[str, ...], level: str) -> bool | None:
    """None (nothing to decide) when every one of methods scores 0 on level."""
    return claim_verdict(holds, [ci for m in methods for ci in columns(m, level)])


pair, trio = ("visr", "apt"), ("visr", "apt", "aps")
nobody_beats_aps = [verdict(not any(beats_on(o, "aps", lv) for o in pair), trio, lv) for lv in levels]
claims = {"VISR beats APT on the easy level": verdict(beats_on("visr", "apt", "easy"), pair, "easy"),
          "APT beats VISR on the hard level": verdict(beats_on("apt", "visr", "hard"), pair, "hard"),
          "APS is best or tied-best on both levels (nobody beats it)":  # decided on the levels that decide
              False if False in nobody_beats_aps else True if True in nobody_beats_aps else None}
print()
for claim, holds in claims.items():
    print(f"the paper's claim '{claim}': {VERDICTS[holds]}")
print(f"{sum(holds is True for holds in claims.values())} of {len(claims)} claims hold")
beaten_by = [f"{other} on {level}" for other in ("visr", "apt") for level in levels
             if beats_on(other, "aps", level)]
print(f"APS is beaten by: {', '.join(beaten_by) or 'nobody'}")
for level in levels:
    solved = [f"{m} {success[m, level, 'finetuned'][0]:.2f}" for m in ("visr", "apt", "aps", "dqn")
              if success[m, level, "finetuned"][0] > 0]
    print(f"{level}: methods with any fine-tuned success: {', '.join(solved) or 'none'}")

# %% [markdown]
# Keep these numbers in mind: notebook 04a runs one seed of the same sweep live and puts it on the same
# bars.
#
# ## Two ways to write I(s; z)
#
# VISR and APS maximise the same quantity, the mutual information between the skill $z$ (a task vector
# $w$ once $z \equiv w$) and the states its policy visits. Mutual information can be split two ways, and
# each method takes one (the paper's Sections 4.1 and 4.4):
#
# | | VISR: $I(s; z) = H(z) - H(z \mid s)$ | APS: $I(s; z) = H(s) - H(s \mid z)$ |
# |---|---|---|
# | first term | $H(z)$: how varied the skills are | $H(s)$: how spread out the states are |
# | it rewards | nothing: $z$'s prior is fixed | going where the agent has not been: **exploration** |
# | second term | $-H(z \mid s)$: the state reveals the skill | $-H(s \mid z)$: the skill predicts the state |
# | it rewards | *recognisable* skills | *consistent* skills: **exploitation** of what was found |
# | made tractable by | a learned $q(z \mid s)$ | particles for $H(s)$ (Eq. 2); a learned $q(s \mid z)$ |
#
# Every term but $H(z)$ is intractable: $p(s)$ and $p(s \mid z)$ are what the changing policies induce
# through unknown dynamics, $p(z \mid s)$ their posterior. Only $p(z)$ is known: we choose it, $w$ uniform
# on the unit sphere.
#
# With the prior fixed, VISR only asks skills to be recognisable, however few states they cover; APS's
# split keeps a term that grows with the states covered. That is the argument for APS; the sweep above
# and notebooks 04a and 04b test what it buys.
#
# **The bound on $-H(s \mid z)$ (Eq. 3).** For any distribution $q(s \mid z)$,
#
# $$-H(s \mid z) = \mathbb{E}_{s,z}\big[\log p(s \mid z)\big]
# = \mathbb{E}_{s,z}\big[\log q(s \mid z)\big] + \mathbb{E}_{z}\big[\mathrm{KL}\big(p(\cdot \mid z)\,\Vert\,
# q(\cdot \mid z)\big)\big] \;\ge\; \mathbb{E}_{s,z}\big[\log q(s \mid z)\big], \tag{3}$$
#
# because a KL divergence is never negative. The gap is the expected KL, zero exactly when $q = p$: so
# fitting $q$ by maximum likelihood (Eq. 5 below) tightens the bound, and the policy is paid
# $\log q(s \mid z)$.
#
# **Predict:** on a small made-up example (6 states, 3 skills, a random $q$), how large will the gap be
# when $q = p$? And will the gap equal the expected KL to the fourth decimal, or only roughly?

# %%
rng = np.random.default_rng(seed)
p_z = np.full(3, 1 / 3)  # z from a fixed prior
p_s_z = rng.dirichlet(np.ones(6), size=3)  # p(s | z), one row per skill
q_s_z = rng.dirichlet(np.ones(6), size=3)  # a variational q(s | z)
joint = p_z[:, None] * p_s_z
minus_h = (joint * np.log(p_s_z)).sum()  # -H(s|z) = E[log p(s|z)]
bound = (joint * np.log(q_s_z)).sum()  # E[log q(s|z)]
expected_kl = (p_z * (p_s_z * np.log(p_s_z / q_s_z)).sum(1)).sum()
print(f"-H(s|z) = {minus_h:.4f} >= E[log q(s|z)] = {bound:.4f}: {minus_h >= bound}; "
      f"gap {minus_h - bound:.4f}, E_z KL(p||q) {expected_kl:.4f}")
print(f"with q = p the gap is {minus_h - (joint * np.log(p_s_z)).sum():.4f}")

# %% [markdown]
# **The von Mises–Fisher step (Eq. 4).** APS chooses $q$ so that its log is VISR's reward. Embed each
# state on the unit sphere, $\lVert\phi(s)\rVert = 1$, and let $q(\cdot \mid w)$ be a von Mises–Fisher
# density there, with mean direction $w$ and concentration $\kappa$:
#
# $$q(s \mid w) = C_d(\kappa)\, \exp\big(\kappa\, \phi(s)^\top w\big), \qquad
# \frac{1}{C_d(\kappa)} = \int_{\lVert x \rVert = 1} \exp(\kappa\, x^\top w)\, dx .$$
#
# Rotating the sphere to move $w$ leaves the normaliser unchanged: it depends on $\kappa$ and $d$, not on
# $w$'s direction. With $\kappa = 1$ for every skill,
#
# $$r^{\text{exploitation}}_{\text{APS}}(s, a, s') = \log q(s \mid w) = \phi(s)^\top w + \text{const},
# \tag{4}$$
#
# and the constant drops out of every argmax and gradient. The density is symmetric in its two unit
# vectors: VISR's $\log q(w \mid s)$, with mean $\phi(s)$, is the same $\phi(s)^\top w$ (the paper's "key
# observation"). What this assumes:
#
# * **States on a sphere**: $\phi$'s output is L2-normalised. (Strictly $q$ is a density over the point
#   $\phi(s)$; over the finite set of states it would need $\sum_s \exp(\phi(s)^\top w)$, which depends
#   on $w$ unless the features cover the sphere evenly.)
# * **One concentration for all skills**: a skill's own $\kappa_w$ would add $\log C_d(\kappa_w)$.
# * **$w$ uniform on the sphere**, a fixed prior: $H(z)$ is a constant, every direction gets skills, and
#   the reward is linear in $w$, as successor features need.
#
# The next cell checks the normaliser on the ordinary sphere ($d = 3$), closed form
# $4\pi \sinh(\kappa)/\kappa$, by integrating over a fine grid, for two directions of $w$ and two $\kappa$.
#
# **Predict:** which of the four numbers will agree: same $\kappa$, different $w$; or same $w$,
# different $\kappa$?

# %%
n = 1000  # the midpoint rule on an n x 2n grid of (polar angle, longitude)
polar, longitude = np.meshgrid((np.arange(n) + 0.5) * np.pi / n, (np.arange(2 * n) + 0.5) * np.pi / n,
                               indexing="ij")
sphere = np.stack([np.sin(polar) * np.cos(longitude), np.sin(polar) * np.sin(longitude), np.cos(polar)], -1)
area = np.sin(polar) * (np.pi / n) ** 2  # each grid cell's area
directions = {"w = north pole": np.array([0.0, 0.0, 1.0]),
              "w = (0.6, -0.48, 0.64)": np.array([0.6, -0.48, 0.64])}
log_normaliser = {(kappa, name): np.log((np.exp(kappa * sphere @ w) * area).sum())
                  for kappa in (1.0, 4.0) for name, w in directions.items()}
for (kappa, name), value in log_normaliser.items():
    print(f"kappa {kappa:.0f}, {name:<22}: log of the integral {value:.6f}, closed form "
          f"{np.log(4 * np.pi * np.sinh(kappa) / kappa):.6f}")
same_w = all(abs(log_normaliser[kappa, a] - log_normaliser[kappa, b]) < 1e-5
             for kappa in (1.0, 4.0) for a in directions for b in directions)
print(f"the normaliser is the same for both directions of w: {same_w}; it changes with kappa: "
      f"{abs(log_normaliser[1.0, 'w = north pole'] - log_normaliser[4.0, 'w = north pole']) > 1e-3}")

# %% [markdown]
# **One $I$, two surrogates.** Both splits are the same number: $H(z) - H(z \mid s) = H(s) - H(s \mid z)
# = I(s; z)$ exactly; what differs is what each method pays. VISR pays $\log q(z \mid s)$, a lower bound
# on $-H(z \mid s)$ (Eq. 3 with the roles swapped) that reaches 0, its maximum, once every skill is
# recognisable. APS pays a surrogate per term: APT's particle reward for $H(s)$, which grows with the
# spread of the states, and $\phi(s')^\top w \in [-1, 1]$ for $-H(s \mid z)$. Their sum bounds nothing.
#
# A made-up case: on an 8 x 8 grid, four skills either *huddle* (each on one cell of a 2 x 2 corner) or
# *spread* (each uniform over one 4 x 4 quadrant). Both are perfectly recognisable. The next cell
# computes every term exactly, and APS's exploration term (k = 10) on 256 visited states as particles.
#
# **Predict:** which of the two skill sets does APS's exploration term prefer, and by how much does the
# spread set's $-H(s \mid z)$ fall below the huddle's? Could $\phi(s')^\top w$ ever pay back that much?

# %%
cells = np.array([(row, col) for row in range(8) for col in range(8)], dtype=float)
skill_sets = {"huddle": [[(0, 0)], [(0, 1)], [(1, 0)], [(1, 1)]],  # each skill's cells
              "spread": [[(r, c) for r in rows for c in cols] for rows in (range(4), range(4, 8))
                         for cols in (range(4), range(4, 8))]}
sampler = np.random.default_rng(seed)
for name, skills in skill_sets.items():
    p_s_given_z = np.zeros((4, 64))  # p(s | z): each skill uniform over its cells
    for z, skill_cells in enumerate(skills):
        p_s_given_z[z, [8 * r + c for r, c in skill_cells]] = 1 / len(skill_cells)
    p_s = p_s_given_z.mean(0)  # z uniform over the four skills
    entropy = lambda p: -(p[p > 0] * np.log(p[p > 0])).sum()  # noqa: E731
    h_s, h_s_given_z = entropy(p_s), np.mean([entropy(row) for row in p_s_given_z])
    visr_bound = np.log(4) - 0.0  # H(z) - H(z | s): each visited cell belongs to one skill
    visited = torch.from_numpy(cells[sampler.choice(64, size=256, p=p_s)])  # 256 states as particles
    exploration = particle_entropy_reward(visited, visited, 10, exclude_self=True).mean()  # k as the library
    print(f"{name:<6}: H(s) {h_s:.3f}, H(s|z) {h_s_given_z:.3f}, I {h_s - h_s_given_z:.3f}, VISR's bound "
          f"{visr_bound:.3f} | APS's exploration term (mean of 256 particles) {float(exploration):.3f}")

# %% [markdown]
# Both sets sit at $I = \log 4 \approx 1.386$ and at VISR's bound, so VISR's reward cannot prefer one.
# APS's exploration term prefers the spread set: a huddled state, with dozens of copies in the batch,
# earns nothing. The exact objective would cancel that, the spread set's $-H(s \mid z)$ being
# $\log 16 \approx 2.77$ lower, but $\phi(s')^\top w \in [-1, 1]$ cannot charge that much. So APS's reward
# favours coverage beyond what $I$ would: the point of the method, and why its reward bounds nothing.
#
# %% [markdown]
# **Where APS sits.** The paper's Table 1, redrawn (the paper's entries): "visual" means shown to work
# from pixels, "task" conditioned on a latent task $z$, "off-policy" learning from replay.

# %%
table_columns = ("objective", "exploration", "visual", "task", "off-policy", "pretrained model")
table_rows = {
    "APT": (r"$\max\, H(s)$", True, True, False, True, r"$\pi(a|s),\ Q(s,a)$"),
    "VISR": (r"$\max\, H(z) - H(z|s)$", False, True, True, True, r"$\psi(s,z),\ \phi(s)$"),
    "MEPOL": (r"$\max\, H(s)$", "state-based only", False, False, False, r"$\pi(a|s)$"),
    "DIAYN": (r"$\max\, -H(z|s) + H(a|z,s)$", False, False, True, False, r"$\pi(a|s,z)$"),
    "EDL": (r"$\max\, H(s) - H(s|z)$", "state-based only", False, True, True, r"$\pi(a|s,z),\ q(s'|s,z)$"),
    "DADS": (r"$\max\, H(s) - H(s|z)$", True, False, True, False, r"$\pi(a|s,z),\ q(s'|s,z)$"),
    "APS": (r"$\max\, H(s) - H(s|z)$", True, True, True, True, r"$\psi(s,z),\ \phi(s)$"),
}
fig, ax = plt.subplots(figsize=(13, 3.6))
plots.plot_method_table(ax, table_columns, table_rows, highlight="APS", groups=(1, 5))
ax.set_title("Pretraining without reward: objective and properties (after the paper's Table 1; "
             "\u2713* = in state-based RL only)")
fig.tight_layout()
plt.show()
every_mark = [name for name, cells in table_rows.items() if all(cell is True for cell in cells[1:5])]
print(f"methods with a check in all four property columns: {', '.join(every_mark)}")

# %% [markdown]
# **APS's reward is two things you have built** (the schematic at the top): VISR's $\phi(s')^\top w$
# (`rewards.vmf_reward`, notebook 02) plus APT's particle reward (`rewards.particle_entropy_reward`,
# notebook 03), both on $h = \phi(s')$:
#
# $$r_{\text{APS}}(s, a, s') = \underbrace{\phi(s)^\top w}_{\text{notebook 02}} +
# \underbrace{\log\Big(1 + \frac{1}{k}\sum_{h^{(j)} \in \mathrm{N}_k(h)} \lVert h - h^{(j)}
# \rVert\Big)}_{\text{notebook 03}}, \qquad h = \phi(s'). \tag{6}$$
#
# The library's `rewards.intrinsic_reward`, which the learner trains on, is that sum; the next cell checks
# it on random unit features.

# %%
generator = torch.Generator().manual_seed(seed)
phi_demo = torch.nn.functional.normalize(torch.randn(64, 16, generator=generator), dim=1)  # phi(s'), unit
w_demo = sample_tasks(64, 16, generator)
built = vmf_reward(phi_demo, w_demo) + particle_entropy_reward(phi_demo, phi_demo, 10, exclude_self=True)
library_reward = intrinsic_reward(phi_demo, w_demo, phi_demo, 10).total
print(f"vmf_reward + particle_entropy_reward equals intrinsic_reward (Eq. 6): "
      f"{torch.allclose(built, library_reward)}")

# %% [markdown]
# ## APS's reward, and Algorithm 1
#
# **Exploration** is APT's particle reward (Eq. 2): in a batch, each $h$ of a state reached is a
# particle, and $\mathrm{N}_k(h)$ are its $k$ nearest other particles:
#
# $$r^{\text{exploration}}_{\text{APS}}(s, a, s') = \log\Big(1 + \frac{1}{k}\sum_{h^{(j)} \in \mathrm{N}_k(h)}
# \lVert h - h^{(j)} \rVert\Big), \qquad h = f(s'). \tag{2}$$
#
# **Exploitation** is Eq. 4, $\phi(s)^\top w$, and $\phi$ is trained to make it large for the states the
# skill $w$ reaches, minimising the von Mises–Fisher negative log-likelihood (Eq. 5, tightening Eq. 3):
#
# $$L = -\mathbb{E}_{s, w}\big[\log q(s \mid w)\big] = -\mathbb{E}_{s, w}\big[\phi(s)^\top w\big]. \tag{5}$$
#
# **APS shares the encoder**, $f = \phi$, and adds the two terms: Eq. 6 above (the paper's Eq. 7 is its
# line $h = \phi(s')$).
#
# The paper writes $\phi(s)$ in the first term, $\phi(s')$ in the second; the library pays both on the
# state reached. Like the authors' code, it uses the plain distance (the paper: to the power $n_h$),
# divided by its running mean (`AgentConfig.knn_normalise`).
#
# Algorithm 1 is VISR's training loop with two lines changed (the environment's reward is thrown away,
# and the target uses $r_{\text{APS}}$):
#
# | line | Algorithm 1 |
# |---|---|
# | 1–2 | initialise $\phi$ (unit-length output) and $\psi$ ($d$ numbers per action) |
# | 3–4 | for each episode, draw $w \sim \mathcal{N}(0, I)$ and normalise it: uniform on the sphere |
# | 5–8 | observe $s_t$, act $\epsilon$-greedily on $Q(s_t, \cdot \mid w) = \psi(s_t, \cdot, w)^\top w$ |
# | 9 | step to $s_{t+1}$; **the environment's reward is thrown away** |
# | 10 | $a' = \arg\max_a \psi(s_{t+1}, a, w)^\top w$ |
# | 11 | **compute $r_{\text{APS}}(s_t, a_t, s_{t+1})$ with Eq. 6** |
# | 12 | **$y = r_{\text{APS}} + \gamma\, \psi(s_{t+1}, a', w)^\top w$** |
# | 13 | $\text{loss}_\psi = \big(\psi(s_t, a_t, w)^\top w - y\big)^2$ |
# | 14 | $\text{loss}_\phi = -\phi(s_t)^\top w$, the von Mises–Fisher negative log-likelihood |
# | 15 | a gradient step on $\psi$ and $\phi$ (minibatches in practice) |
#
# One piece of it is yours to write here; the capstone, notebook 04c, has you write two more, the reward
# and the vMF loss, and train APS on them.
#
# ## Exercise: the n-step successor-feature TD target
#
# Line 12 regresses the scalar $\psi^\top w$. The library learns $\psi$ as a vector instead, with the
# *cumulant*
#
# $$c_i = \phi(s'_i) + \big(r_i - \phi(s'_i)^\top w\big)\, w,$$
#
# with $c_i^\top w = r_i$ for unit $w$: $\psi^\top w$ is trained on the paper's scalar target, while
# $\psi$'s other directions learn the discounted sum of $\phi$ (GPI scores $\psi(s, a, z_i)$ under a
# $w \neq z_i$). Over an n-step window $s'_1, \dots, s'_m$ ($m \le n$: a window stops early at an
# episode's end or where $w$ was redrawn), the target is
#
# $$y = \sum_{i<n} \gamma^i\, \mathrm{mask}_i\, c_i \;+\; \gamma^m\, \mathrm{alive}\;
# \psi_{\text{target}}(s'_m, a', w).$$
#
# Write `my_sf_td_target(base, reward, w, mask, gamma, boot_psi, boot_steps, alive)`: `base` (B, n, d) is
# $\phi(s'_i)$, `reward` (B, n) is $r_i$, `w` (B, d), `mask` (B, n) is true on the $m$ valid steps,
# `boot_psi` (B, d) is $\psi_{\text{target}}(s'_m, a', w)$, `boot_steps` (B,) is $m$ and `alive` (B,) is
# false where the window ended the episode. Return $y$, shape (B, d).
# After a wrong attempt, `my_sf_td_target(*exercises.failing_case("sf_td_target"))` calls yours on the
# inputs it got wrong; once you have tried, `exercises.solution("sf_td_target")` shows a solution.

# %%
def my_sf_td_target(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
    raise NotImplementedError  # your code here


sf_td_target = exercises.check_sf_td_target(my_sf_td_target)

# %% [markdown]
# ## Algorithm 1 in ten lines
#
# Now the update itself, lines 10–14, for one replay batch of n-step windows, as in the authors' code
# (`AgentConfig.nstep_reward = "last"`): the reward of a window's last state $s'_m$ stands for the whole
# window, the target bootstraps with $\gamma^m$, and the kNN particles are those last states. The networks
# read the centred board, `learner.inputs(obs)`. The next cell pretrains APS for two rounds on the easy
# level for a replay batch, then runs the ten lines and the library's `Learner.update` on copies of the
# same learner.
#
# **Predict:** will the ten lines and `Learner.update` give the same two losses to six decimals, or only
# roughly (the library batches, masks and compiles its update differently)?

# %%
def aps_losses(learner, batch, td_target):
    """Algorithm 1, lines 10-14, on a replay batch of n-step windows (reward of the last state s'_m)."""
    cfg, w, rows = learner.config, batch.w, torch.arange(len(batch.w))
    x_t, x_m = learner.inputs(batch.obs), learner.inputs(batch.boot_obs)  # s_t and s'_m, centred
    phi_m = learner.phi(x_m)  # phi(s'_m), unit length: the features of both reward terms (h = phi)
    a_next = (learner.psi(x_m, w) * w[:, None]).sum(-1).argmax(1)  # line 10: argmax_a psi(s'_m, a, w)^T w
    r = cfg.exploit_weight * (phi_m * w).sum(1) + cfg.explore_weight * particle_entropy_reward(
        phi_m, phi_m, cfg.k, exclude_self=True, normaliser=learner.normaliser)  # line 11: Eq. 6
    boot, one = learner.psi_target(x_m, w)[rows, a_next], torch.ones(len(w), 1)
    y = td_target(phi_m[:, None], r[:, None], w, one, cfg.gamma, boot, batch.boot_steps, one[:, 0])  # 12
    loss_psi = ((learner.psi(x_t, w)[rows, batch.action] - y.detach()) ** 2).sum(1).mean()  # line 13
    loss_phi = -(phi_m * w).sum(1).mean()  # line 14: Eq. 5 on s'_m
    return loss_psi, loss_phi, r


round_steps = config.num_envs * gridworld.MAX_EPISODE_STEPS  # one round: every env plays one episode
kept = {}
short, _ = pretrain("aps", "easy", 2 * round_steps, seed, config, on_round=lambda end: kept.update(end=end))
agent = short.config
batch = kept["end"].replay.sample(agent.batch_size, agent.n_step, torch.Generator().manual_seed(seed))
loss_psi, loss_phi, r = aps_losses(copy.deepcopy(short), batch, sf_td_target)
library = {name: value.item() for name, value in copy.deepcopy(short).update(batch).items()}  # one step
print(f"a batch of {len(r)} windows of up to {agent.n_step} steps; mean r_APS {r.mean():.4f}")
print(f"loss_psi: ten lines {loss_psi:.6f}, Learner.update {library['loss_sf']:.6f}")
print(f"loss_phi: ten lines {loss_phi:.6f}, Learner.update {library['loss_vmf']:.6f}")
agree = np.allclose([loss_psi.item(), loss_phi.item()], [library["loss_sf"], library["loss_vmf"]], rtol=1e-5)
print(f"the ten lines compute the library's losses: {agree}")

# %% [markdown]
# Besides the exercise's vector loss, the ten lines depart from Algorithm 1 in a few places, each
# documented in its configuration field (`help(TrainConfig)`, `help(AgentConfig)`):
#
# * **$\phi(s')$ in the vMF loss** (line 14): Algorithm 1 writes $\phi(s_t)$; the library uses
#   $\phi(s'_m)$, the features whose reward the target just used.
# * **The last state's reward for the whole window** (`nstep_reward="last"`), as the authors' code does;
#   `"sum"` pays the exact discounted sum over the window instead.
# * **Double Q-learning**: $a'$ comes from the online $\psi$, its value from a target copy
#   $\psi_{\text{target}}$, refreshed every 100 updates as in the paper.
# * **An absorbing target while pretraining** (`TrainConfig.absorbing_target`): the agent stays on the
#   target until the round ends, paid $\phi(\text{target})^\top w$ like anywhere else, so "go to the
#   target and stay" is a skill it can learn; hence `alive` = 1 in the ten lines. Identification,
#   evaluation and fine-tuning keep the paper's protocol (+10 ends the episode).
# * **Centred inputs** (`normalise_observations`): fed the raw one-hot board, mostly entries always on,
#   most of $\phi$'s ReLUs die (102 of 128 in notebook 02b's run); the networks read the board minus its
#   running mean (`aps_teach.learner.inputs`).
#
# **Explain it.** Line 13 of the ten lines uses `y.detach()`. What would go wrong without it?
#
# <details><summary>Answer</summary>
#
# The target $y$ depends on $\phi$ (through the cumulant and the reward). Without `detach`, the gradient
# of $\text{loss}_\psi$ would also move $\phi$ to make the target easier to hit, e.g. by shrinking the
# reward differences $\psi$ must predict. TD learning treats the target as a constant (a semi-gradient
# method); $\phi$ is trained only by line 14. The library computes targets under `torch.no_grad()`.
# </details>

# %% [markdown]
# ## What this run found
#
# Each line below is computed from an output above.

# %%
print(f"* the committed sweep: {sum(holds is True for holds in claims.values())} of {len(claims)} of the "
      f"paper's claims hold; APS is beaten by {', '.join(beaten_by) or 'nobody'}")
print(f"* Eq. 3 on a made-up example: the bound holds: {minus_h >= bound}; its gap is the expected KL: "
      f"{np.isclose(minus_h - bound, expected_kl)}")
print(f"* the ten lines of Algorithm 1 compute the library's losses: {agree}")

# %% [markdown]
# ## Summary
#
# * Mutual information splits two ways: VISR's $H(z) - H(z \mid s)$ pays recognisable skills; APS's
#   $H(s) - H(s \mid z)$ pays coverage (Eq. 2) and consistency, bounded by $\mathbb{E}[\log q(s \mid z)]$
#   (Eq. 3), which a von Mises–Fisher $q$ on unit features makes $\phi(s)^\top w$ + const (Eq. 4).
# * APS is VISR's loop with APT's kNN term added to the reward, on the same $\phi$ (Eq. 6). You wrote the
#   TD target; the ten lines of Algorithm 1 built on it compute what the library computes.
# * The library departs from Algorithm 1 only for a reason, written in the field it concerns (the list
#   under the ten lines).
# * The paper's three claims are decided from the committed sweep's intervals (the first line above).
#
# **Key equations: APS** (VISR's loop; what changes is the reward)
#
# * the objective, $z \equiv w$: $I(s; z) = H(s) - H(s \mid z)$, with
#   $-H(s \mid z) \ge \mathbb{E}[\log q(s \mid w)]$ (Eq. 3);
# * its reward (Eq. 6), the kNN term on the same $\phi$:
#   $r(s, a, s') = \phi(s')^\top w + \log\big(1 + \frac{1}{k} \sum_{h^{(j)} \in \mathrm{N}_k(h)}
#   \lVert h - h^{(j)} \rVert\big)$, $h = \phi(s')$;
# * what trains $\phi$: $L_\phi = -\mathbb{E}_{s', w}\big[\phi(s')^\top w\big]$ (Eq. 5), as in VISR;
# * what trains $\psi$: the n-step target $y = \sum_{i<m} \gamma^i c_i + \gamma^m
#   \psi_{\text{target}}(s'_m, a^*, w)$, with $c_i^\top w = r_i$;
# * acting and a new task: as in VISR, $Q = \psi(s, a, w)^\top w$ with GPI, and $w$ by least squares.
#
# Next: notebook 04a puts APS on the grid (both reward terms as heatmaps, your seed of Figure 4, GPI at
# work); then 04b (where zero-shot success gets lost), 04c (the capstone) and 05 (the ablations).

# %%
print(f"notebook wall time: {time.perf_counter() - notebook_start:.0f} s")
