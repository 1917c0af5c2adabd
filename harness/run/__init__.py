"""One run, start to end: the runner, the fault injector, suites, live progress."""
