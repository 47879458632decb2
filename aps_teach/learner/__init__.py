"""The learner both wings share: Algorithm 1 of Liu & Abbeel (2021) and its settings.

    config    AgentConfig: the method (visr, apt, aps, dqn) and every setting of the learner
    batch     Batch: a replay minibatch of n-step windows
    rewards   Eq. 6: the vMF reward phi(s')^T w and the kNN particle entropy, their normalisers, the vMF loss
    tasks     w on the unit sphere: sampling, Q = psi^T w, GPI, the task regression
    inputs    what the gridworld networks read: centred boards on the entries that vary
    networks  phi and psi as MLPs (the Atari wing swaps in conv networks)
    update    one update in the algorithm's order, on any `update.Trainable`
    agent     Learner: networks, optimiser, acting, the fine-tuning switch, checkpoints
    group     LearnerGroup: several seeds' learners updated as one batched learner
    adapt     psi adapted offline to an identified w on a reward-free replay (an option, issue 60)
    fb        forward-backward representations F, B learnt offline on a reward-free replay (the fb arm)
"""
