"""Atari at the paper's scale: the evaluation protocol, replay, networks and scores for APS on ale-py.

One module per job: `config` (every number, with the paper's defaults and where each comes from, and the
run's device, envs and logging), `envs` (ale-py vector environments under the protocol, autoreset
made explicit), `frame_replay` (uint8 single frames, stacks and n-step windows rebuilt by index), `networks`
and `augment` (the conv phi and psi, random shift and intensity), `agent` (the gridworld learner on pixels),
`update_step`, `metrics` (metrics.csv, TensorBoard), `train` (the phases, as `aps_teach.grid.train`),
`experiments` (a whole run and its directory, as `aps_teach.grid.experiments`), `sweep`, `scores`
(human-normalised scores and their aggregates), `plots` (the Atari figures).
"""
