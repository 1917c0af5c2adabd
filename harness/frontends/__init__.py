"""The ways in: the `ftharness` CLI, the pytest plugin, the Chaos Toolkit extension."""
