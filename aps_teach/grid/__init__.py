"""The gridworld wing: Algorithm 1's phases on the key-passageway levels, and the exact references to check
them against. The same roles as `aps_teach.atari`, under the same names where the role is the same.

    config         TrainConfig: how the learner meets the levels, and its checks
    envs           a batch of levels stepped in lockstep on either engine, with coverage bookkeeping
    replay         n-step replay for N parallel environments
    memory         will a run fit? every memory estimate and check of this wing, before anything is allocated
    rounds         the round loop of a phase, a generator driven per seed group
    train          the phases: pretrain -> identify_task -> evaluate -> finetune
    experiments    a whole run and its directory (`run_gridworld`, `Budget`)
    sweep          the Figure 4 sweep: every method x level x seed, in seed groups
    blame          where a zero-shot score was lost: identification, phi or psi
    rollouts       a pretrained learner outside training: greedy paths, observations, transitions
    snapshots      a pretraining's checkpoints for the reward-heatmap widgets
    cell_maps      what a learner computes, cell by cell, for the heatmaps
    transfer       zero-shot transfer to reward-map tasks on mazes
    quickstart     `aps-teach` with no arguments: APS on the easy level, start to finish
    tabular        exact successor features, GPI and values on a level's tables
    random_policy  the uniformly random policy: sampled and exact
    plots          gridworld figures (the view of this wing)
"""
