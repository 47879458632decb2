"""The gridworld studies behind the results tables (docs/studies.md): each a sweep of whole runs
(`aps_teach.grid.experiments`) that returns rows, drawn by `aps_teach.studies.plots` and run by `aps-teach
gridworld study | parts`.

    budget          how the default budgets were chosen: pretraining and fine-tuning steps, levels, mazes
    aps_parts       APS with one part changed per arm, beside VISR, APT, DQN and a random walk
    finetune        why fine-tuning dipped: fine-tuning protocols on one set of pretrained learners
    cross_training  Section 6's X -> Y: a learner trained on the replay another method fills
    probes          measurements of a pretrained learner (skill coverage, how Q depends on w)
"""
