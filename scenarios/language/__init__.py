"""The scenario file contract, one job a module: the YAML reader, the parts of a scenario
(cluster, workload, failure_config, expect), the torchrun and release rules, the Scenario
model and its cross-field checks, the error lines and the published JSON Schema.
`ftharness.scenarios.schema` is the public entry (load_scenario, parse_scenario) and
re-exports what callers use; import from there unless you need one part alone."""
