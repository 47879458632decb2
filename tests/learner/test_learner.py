"""Replay n-step windows and the learner's TD targets against brute-force loops; config validation."""

import numpy as np
import pytest
import torch

from aps_teach.grid.replay import NStepReplay
from aps_teach.learner.agent import Learner
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.tasks import sample_tasks
from aps_teach.learner.update import Trainable, td_targets

OBS = (2, 3, 3)


def _filled_replay(rows=30, envs=3, seed=0, rewards=False, resample_every=3):
    """Random transitions; each env's w is redrawn every `resample_every` rows, at an env-specific phase."""
    rng = np.random.default_rng(seed)
    replay = NStepReplay(rows, envs, OBS, 4, store_rewards=rewards)
    w = sample_tasks(envs, 4, torch.Generator().manual_seed(seed))
    for t in range(rows):
        ended = rng.random(envs) < 0.2
        fresh = sample_tasks(envs, 4, torch.Generator().manual_seed(1000 + t))
        redraw = torch.tensor([(t + e) % resample_every == 0 for e in range(envs)])
        w = torch.where(redraw[:, None], fresh, w)
        row = {
            "obs": rng.integers(0, 2, (envs, *OBS)), "next_obs": rng.integers(0, 2, (envs, *OBS)),
            "action": rng.integers(0, 4, envs), "w": w,
            "terminated": ended & (rng.random(envs) < 0.5), "ended": ended,
        }
        if rewards:
            row["reward"] = rng.normal(size=envs).astype(np.float32)
        replay.add(**row)
    return replay


def test_nstep_windows_match_brute_force():
    replay = _filled_replay()
    n = 4
    batch = replay.sample(64, n, torch.Generator().manual_seed(1))
    d = replay.data
    for b in range(64):
        # recover (t, e) of the window start from the stored obs
        t, e = next((t, e) for t in range(replay.size) for e in range(replay.num_envs)
                    if torch.equal(d["obs"][t, e], batch.obs[b])
                    and torch.equal(d["w"][t, e], batch.w[b]))
        steps = 0
        for i in range(n):
            if t + i >= replay.size or not torch.equal(d["w"][t + i, e], d["w"][t, e]):
                break
            steps += 1
            assert torch.equal(batch.next_obs[b, i], d["next_obs"][t + i, e])
            if d["ended"][t + i, e]:
                break
        assert batch.boot_steps[b] == steps
        assert batch.mask[b].tolist() == [True] * steps + [False] * (n - steps)
        assert torch.equal(batch.boot_obs[b], d["next_obs"][t + steps - 1, e])
        assert bool(batch.boot_alive[b]) == (not d["terminated"][t + steps - 1, e])


def test_windows_stop_where_w_changes_and_at_episode_ends():
    replay = _filled_replay(resample_every=3)
    batch = replay.sample(256, 5, torch.Generator().manual_seed(7))
    assert int(batch.boot_steps.max()) <= 3  # w is redrawn every 3 rows
    assert int(batch.boot_steps.min()) == 1
    fixed = _filled_replay(resample_every=10**6)  # w never changes: only episode ends and the newest row cut
    assert int(fixed.sample(256, 5, torch.Generator().manual_seed(7)).boot_steps.max()) == 5


def test_replay_rejects_missing_or_extra_columns():
    replay = NStepReplay(4, 2, OBS, 4, store_rewards=False)
    row = {"obs": np.zeros((2, *OBS)), "next_obs": np.zeros((2, *OBS)), "action": np.zeros(2),
           "w": np.zeros((2, 4)), "terminated": np.zeros(2, bool), "ended": np.zeros(2, bool)}
    with pytest.raises(ValueError, match="this buffer stores"):
        replay.add(**row, reward=np.zeros(2))


def _brute_targets(learner, batch, intrinsic, last=False):
    """Loop over the batch: cumulants, n-step sum (or, `last`, the window's last state alone) and double-Q
    bootstrap, one sample at a time. `intrinsic` is (B, n) per window step, or (B,) per window if `last`."""
    cfg = learner.config
    out = []
    for b in range(len(batch.w)):
        w = batch.w[b].double().numpy()
        m = int(batch.boot_steps[b])
        total = np.zeros(cfg.feature_dim)
        for i in ([m - 1] if last else range(m)):
            s_next = batch.next_obs[b, i][None]
            base = np.zeros_like(w) if learner.phi is None else learner.features(s_next)[0].double().numpy()
            if intrinsic is None:
                r = float(batch.reward[b, i])
            else:
                r = intrinsic[b] if last else intrinsic[b, i]
            c = base + (r - base @ w) * w
            assert c @ w == pytest.approx(r, abs=1e-5)
            total += (1.0 if last else cfg.gamma**i) * c
        boot = batch.boot_obs[b][None]
        wt = batch.w[b][None]
        x = learner.inputs(boot)
        q = (learner.psi(x, wt)[0] * wt).sum(-1)
        a_star = int(q.argmax())
        alive = float(batch.boot_alive[b]) if not (learner.phase == "pretrain"
                                                     and cfg.bootstrap_through_termination) else 1.0
        total += cfg.gamma**m * alive * learner.psi_target(x, wt)[0, a_star].double().numpy()
        out.append(total)
    return np.array(out)


def _knn(space, k):
    dist = np.linalg.norm(space[:, None] - space[None], axis=-1)
    np.fill_diagonal(dist, np.inf)
    return np.log1p(np.sort(dist, axis=1)[:, :k].mean(1))


@torch.no_grad()
@pytest.mark.parametrize("method", ["visr", "aps", "apt"])
def test_pretrain_targets_match_brute_force_summing_every_step(method):
    cfg = AgentConfig(method=method, feature_dim=4, hidden=16, n_step=4, k=3, knn_normalise=False,
                      bootstrap_through_termination=False, representation="observation", nstep_reward="sum")
    learner = Learner(cfg, OBS, 4, seed=0)
    learner.psi_target.load_state_dict(Learner(cfg, OBS, 4, seed=1).psi.state_dict())  # differ from psi
    batch = _filled_replay(resample_every=5).sample(16, 4, torch.Generator().manual_seed(2))
    w = batch.w.double().numpy()
    if method == "apt":  # kNN on the raw observations, w fixed to e_1
        batch = batch._replace(w=learner.default_task(16))
        w, intrinsic = batch.w.double().numpy(), np.zeros((16, 4))
        space = batch.next_obs.flatten(2).double().numpy()
    else:
        space = learner.features(batch.next_obs.flatten(0, 1)).unflatten(0, (16, 4)).double().numpy()
        intrinsic = np.einsum("bnd,bd->bn", space, w)
    y, stats = td_targets(learner, batch)[:2]
    if method in ("aps", "apt"):
        mask = batch.mask.numpy()
        explore = np.zeros(mask.shape)
        explore[mask] = _knn(space[mask], 3)  # every valid window state is a particle
        intrinsic = intrinsic + explore
        assert stats["reward_explore"].item() == pytest.approx(explore[mask].mean(), rel=1e-5)
    np.testing.assert_allclose(y.numpy(), _brute_targets(learner, batch, intrinsic), rtol=1e-4, atol=1e-5)


@torch.no_grad()
@pytest.mark.parametrize("method", ["visr", "aps", "apt"])
def test_pretrain_targets_match_brute_force_rewarding_the_last_state(method):
    cfg = AgentConfig(method=method, feature_dim=4, hidden=16, n_step=4, k=3, knn_normalise=False,
                      bootstrap_through_termination=False, representation="observation", nstep_reward="last")
    learner = Learner(cfg, OBS, 4, seed=0)
    learner.psi_target.load_state_dict(Learner(cfg, OBS, 4, seed=1).psi.state_dict())
    batch = _filled_replay(resample_every=5).sample(16, 4, torch.Generator().manual_seed(2))
    last = batch.boot_obs  # s'_m of each window
    ends = batch.boot_steps - 1
    assert all(torch.equal(last[b], batch.next_obs[b, int(ends[b])]) for b in range(16))
    if method == "apt":
        batch = batch._replace(w=learner.default_task(16))
        intrinsic = _knn(last.flatten(1).double().numpy(), 3)  # one particle per window
    else:
        space = learner.features(last).double().numpy()
        intrinsic = space @ batch.w.double().numpy().T
        intrinsic = np.diag(intrinsic) + (_knn(space, 3) if method == "aps" else 0.0)
    y, _ = td_targets(learner, batch)[:2]
    np.testing.assert_allclose(y.numpy(), _brute_targets(learner, batch, intrinsic, last=True),
                               rtol=1e-4, atol=1e-5)


def _knn_feature_learner(**changes):
    """APS with the kNN reward as a feature of its own (weights 0.5 and 2, no normaliser), its target
    network another seed's psi, and a batch of 16 windows of 4 steps from a filled replay."""
    cfg = AgentConfig(method="aps", feature_dim=4, hidden=16, n_step=4, k=3, knn_normalise=False,
                      bootstrap_through_termination=False, knn_feature=True, exploit_weight=0.5,
                      explore_weight=2.0, **changes)
    learner = Learner(cfg, OBS, 4, seed=0)
    learner.psi_target.load_state_dict(Learner(cfg, OBS, 4, seed=1).psi.state_dict())
    return cfg, learner, _filled_replay(resample_every=5).sample(16, 4, torch.Generator().manual_seed(2))


@torch.no_grad()
@pytest.mark.parametrize("nstep_reward", ["last", "sum"])
def test_knn_feature_targets_are_the_successor_features_of_phi_and_the_knn_reward(nstep_reward):
    """With the kNN reward as a feature of its own, y = sum gamma^i (phi(s'_i), r_kNN(s'_i)) + gamma^m
    psi_target(s'_m, a*) over d + 1 outputs, a* = argmax psi(s'_m, a, w)^T (exploit w, explore): the same
    Eq. 6 reward, y^T (exploit w, explore) its n-step return."""
    cfg, learner, batch = _knn_feature_learner(nstep_reward=nstep_reward)
    y, stats = td_targets(learner, batch)[:2]
    assert y.shape == (16, 5)
    last = nstep_reward == "last"
    states = batch.boot_obs[:, None] if last else batch.next_obs
    mask = torch.ones(16, 1, dtype=torch.bool) if last else batch.mask
    phi = learner.features(states.flatten(0, 1)).unflatten(0, states.shape[:2]).double().numpy()
    knn = np.zeros(mask.shape)
    knn[mask.numpy()] = _knn(phi[mask.numpy()], 3)
    expected = []
    for b in range(16):
        w = batch.w[b]
        weights = np.append(0.5 * w.double().numpy(), 2.0)
        m = int(batch.boot_steps[b])
        steps = [0] if last else range(m)
        total = sum((1.0 if last else cfg.gamma**i) * np.append(phi[b, i], knn[b, i]) for i in steps)
        x = learner.inputs(batch.boot_obs[b][None])
        a_star = int((learner.psi(x, w[None])[0].double().numpy() @ weights).argmax())
        alive = float(batch.boot_alive[b])
        boot = learner.psi_target(x, w[None])[0, a_star].double().numpy()
        expected.append(total + cfg.gamma**m * alive * boot)
    np.testing.assert_allclose(y.numpy(), np.array(expected), rtol=1e-4, atol=1e-5)
    assert learner.task_weights(batch.w[:1], explore=True).tolist() == [[*(0.5 * batch.w[0]).tolist(), 2.0]]
    assert learner.task_weights(batch.w[:1]).tolist() == [[*batch.w[0].tolist(), 0.0]]


@torch.no_grad()
def test_conditioned_on_the_exploration_weight_psi_reads_beta_and_pays_eq6_at_that_weight():
    """With `explore_conditioned` a window's w carries beta as a (d + 1)-th column: psi(s, a, w, beta) and
    y = sum gamma^i (phi(s'_i), r_kNN(s'_i)) + gamma^m psi_target(s'_m, a*, w, beta), a* = argmax psi^T
    (exploit w, beta explore); on a task (w of d columns) beta is 0."""
    cfg, learner, batch = _knn_feature_learner(explore_conditioned=True)
    beta = torch.linspace(0, 1, 16)[:, None]
    batch = batch._replace(w=torch.cat([batch.w, beta], -1))
    y = td_targets(learner, batch)[0]
    phi = learner.features(batch.boot_obs).double().numpy()
    knn = _knn(phi, 3)
    expected = []
    for b in range(16):
        w = batch.w[b]
        weights = np.append(0.5 * w[:4].double().numpy(), 2.0 * float(beta[b]))
        x = learner.inputs(batch.boot_obs[b][None])
        a_star = int((learner.psi(x, w[None])[0].double().numpy() @ weights).argmax())
        boot = learner.psi_target(x, w[None])[0, a_star].double().numpy()
        m = int(batch.boot_steps[b])
        expected.append(np.append(phi[b], knn[b]) + cfg.gamma**m * float(batch.boot_alive[b]) * boot)
    np.testing.assert_allclose(y.numpy(), np.array(expected), rtol=1e-4, atol=1e-5)
    assert learner.psi.head[0].in_features == 16 + 5  # the encoding, w and beta
    task = batch.w[:1, :4]
    assert torch.equal(learner.psi_task(task), torch.cat([task, torch.zeros(1, 1)], -1))
    assert learner.task_weights(task).tolist() == [[*task[0].tolist(), 0.0]]
    half = batch.w[8:9]  # beta = 8 / 15
    assert torch.allclose(learner.task_weights(half, explore=True),
                          torch.cat([0.5 * half[:, :4], torch.tensor([[2.0 * 8 / 15]])], -1))
    with pytest.raises(ValueError, match="explore_conditioned .* needs knn_feature=True"):
        AgentConfig(method="aps", explore_conditioned=True)


def test_knn_feature_is_left_alone_by_finetuning_and_decides_only_pretraining_actions():
    cfg = AgentConfig(method="aps", feature_dim=4, hidden=16, n_step=3, k=3, knn_feature=True)
    learner = Learner(cfg, OBS, 4, seed=0)
    out = learner.psi.head[-1]
    with torch.no_grad():  # psi's kNN output of action 2 (row 2 * 5 + 4) dwarfs every other output
        out.weight[2 * 5 + 4].zero_()
        out.bias[2 * 5 + 4] = 1e3
    obs, w = torch.zeros(3, *OBS), sample_tasks(3, 4, torch.Generator().manual_seed(0))
    generator = torch.Generator().manual_seed(0)
    assert learner.act(obs, w, 0.0, generator, gpi=False, explore=True).tolist() == [2, 2, 2]
    task_q = (learner.psi(learner.inputs(obs), w)[..., :4] * w[:, None]).sum(-1)
    assert learner.act(obs, w, 0.0, generator, gpi=False).tolist() == task_q.argmax(1).tolist()
    # fine-tuning trains psi on the task's d features only: the kNN outputs get no gradient
    learner.start_finetune()
    replay = _filled_replay(resample_every=5, rewards=True)
    knn_rows, task_rows = out.weight[4::5].clone(), out.weight[0::5].clone()
    learner.update(replay.sample(8, 3, torch.Generator().manual_seed(1)))
    assert torch.equal(out.weight[4::5], knn_rows) and not torch.equal(out.weight[0::5], task_rows)


@torch.no_grad()
def test_finetune_targets_use_task_reward_and_terminals():
    learner = Learner(AgentConfig(method="dqn", feature_dim=4, hidden=16, n_step=3), OBS, 4, seed=0)
    learner.start_finetune()
    batch = _filled_replay(rewards=True).sample(16, 3, torch.Generator().manual_seed(3))
    batch = batch._replace(w=learner.default_task(16))
    y, _ = td_targets(learner, batch)[:2]
    np.testing.assert_allclose(y.numpy(), _brute_targets(learner, batch, None), rtol=1e-4, atol=1e-5)


@torch.no_grad()
def test_finetune_targets_use_stored_phi_and_only_while_phi_is_frozen():
    learner = Learner(AgentConfig(method="aps", feature_dim=4, hidden=16, n_step=3), OBS, 4, seed=0)
    learner.start_finetune()
    batch = _filled_replay(rewards=True).sample(16, 3, torch.Generator().manual_seed(5))
    phi = learner.features(batch.next_obs.flatten(0, 1)).unflatten(0, (16, 3))
    y, _ = td_targets(learner, batch._replace(next_phi=phi))[:2]
    np.testing.assert_allclose(y.numpy(), _brute_targets(learner, batch, None), rtol=1e-4, atol=1e-5)
    y_other, _ = td_targets(learner, batch._replace(next_phi=phi.roll(1, dims=0)))[:2]
    assert not torch.allclose(y_other, y)  # the stored phi(s') is what the targets use
    pretraining = Learner(AgentConfig(method="aps", feature_dim=4, hidden=16, n_step=3), OBS, 4, seed=0)
    with pytest.raises(ValueError, match="only valid while phi is frozen"):
        td_targets(pretraining, batch._replace(next_phi=phi))


def test_finetuning_without_a_task_reward_is_a_clear_error():
    learner = Learner(AgentConfig(method="aps", feature_dim=4, hidden=16, n_step=3), OBS, 4, seed=0)
    learner.start_finetune()
    batch = _filled_replay(rewards=False).sample(8, 3, torch.Generator().manual_seed(6))
    with pytest.raises(ValueError, match="fine-tuning needs a batch with the task reward"):
        learner.update(batch)


def test_scalar_loss_is_the_vector_loss_projected_on_w():
    cfg = AgentConfig(method="visr", feature_dim=4, hidden=16, n_step=3, sf_loss="scalar")
    learner = Learner(cfg, OBS, 4, seed=0)
    batch = _filled_replay().sample(8, 3, torch.Generator().manual_seed(4))
    y, _ = td_targets(learner, batch)[:2]
    with torch.no_grad():
        psi_sa = learner.psi(learner.inputs(batch.obs), batch.w)[torch.arange(8), batch.action]
    expected = (((psi_sa - y) * batch.w).sum(-1) ** 2).mean().item()
    assert learner.update(batch)["loss_sf"].item() == pytest.approx(expected, rel=1e-5)


def test_same_seed_same_weights_and_phi_unit_norm():
    a = Learner(AgentConfig(method="aps"), OBS, 4, seed=5)
    b = Learner(AgentConfig(method="aps"), OBS, 4, seed=5)
    for pa, pb in zip(a.psi.parameters(), b.psi.parameters(), strict=True):
        assert torch.equal(pa, pb)
    phi = a.features(torch.randint(0, 2, (10, *OBS)))
    np.testing.assert_allclose(phi.norm(dim=1).numpy(), 1.0, atol=1e-6)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "diayn"}, "valid methods: visr, apt, aps, dqn"),
    ({"feature_dim": 1}, "feature_dim must be an integer >= 2"),
    ({"k": 0}, "k must be an integer >= 1"),
    ({"sf_loss": "huber"}, "valid: vector, scalar"),
])
def test_bad_agent_config(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AgentConfig(**kwargs)


def test_methods_own_the_right_networks():
    methods = ("visr", "apt", "aps", "dqn")
    nets = {m: Learner(AgentConfig(method=m, shared_encoder=True), OBS, 4, 0) for m in methods}
    assert [nets[m].phi is not None for m in methods] == [True, False, True, False]
    assert [nets[m].rep is not None for m in methods] == [False, True, False, False]
    assert Learner(AgentConfig(method="aps", shared_encoder=False), OBS, 4, 0).rep is not None


@pytest.mark.parametrize("method", ["visr", "apt", "aps", "dqn"])
def test_the_learner_offers_the_update_everything_it_reads(method):
    learner = Learner(AgentConfig(method=method, feature_dim=4, hidden=8, batch_size=16, k=3), OBS, 4, seed=0)
    assert isinstance(learner, Trainable)
    del learner.psi_target  # without a member the update reads, it is no longer one
    assert not isinstance(learner, Trainable)
