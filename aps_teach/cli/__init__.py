"""The `aps-teach` command: `main` (the quickstart, `demo`, and the dispatch to the two wings), `gridworld`
and `atari` (their subcommands), `common` (subcommand parsing and the one-line error style they share)."""
