"""What both wings run on: checks, files, locks, random streams, run directories, phases and sweeps.

    checks     value checks that name the field and its valid range
    files      atomic writes and checkpoint loading
    locks      one owner per run or results directory
    seeds      every random stream, named
    memory     will it fit: free memory, checked before anything is allocated
    devices    device names checked, host-to-device copies that do not wait
    stats      summaries over seeds with 95% intervals
    overrides  config overrides by dotted field name
    run_dir    a run directory: claimed, resumed, forced
    phases     what a training phase does the same way in both wings
    executors  where a sweep's runs execute: local processes or a Ray cluster
    sweeps     many runs in parallel, resumable, recorded
    figures    what every figure shares: the methods' colours, writing a figure (a view)
"""
