"""The runtime: clusters, the instrumented job, the runner, the torchrun runtime, the front ends."""
