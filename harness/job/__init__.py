"""The training job: the reference workload, the instrumentation wrapped around
any train function, and the controller-side recorder."""
