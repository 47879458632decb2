"""The studies behind the results tables (docs/studies.md): each a sweep of whole runs
(`aps_teach.grid.experiments`, `aps_teach.atari.sweep`) that returns rows, drawn by `aps_teach.studies.plots`
and run by `aps-teach gridworld study | parts | families | families-budget | held-out | zero-shot |
zero-shot-loss` and `aps-teach atari study | compare`.

    budget          how the default budgets were chosen: pretraining and fine-tuning steps, levels, mazes
    aps_parts       APS with one part changed per arm, beside VISR, APT, DQN and a random walk
    finetune        why fine-tuning dipped: fine-tuning protocols on one set of pretrained learners
    task_families   one pretraining, many tasks: every arm scored on a level's task family
    families_budget the task-family study's budget axis: the same arms at several pretraining budgets
    held_out        the pre-registered test of the task-family study on held-out levels and seeds
    zero_shot       zero-shot over a task family, diagnosed link by link
    zero_shot_loss  the pre-registered experiment on what costs APS zero-shot success on easy
    ablations       the course's ablations of APS's reward weights and normaliser
    cross_training  Section 6's X -> Y: a learner trained on the replay another method fills
    probes          measurements of a pretrained learner (skill coverage, how Q depends on w)
    atari_study     a pre-registered Atari study: its protocol read from the page, run part by part, compared
    arms            arm naming: the task-family studies' arms, a results row's arm read back
    protocol        a pre-registration's protocol block, the digest binding results to its text
    verdicts        the registered metric, its verdicts and their text, and the form of the studies' tables
    zero_shot_fix   the held-out study's zero-shot fix, judged against its registered zero-shot phase
    plots           the studies' figures (the view of this layer)
"""
