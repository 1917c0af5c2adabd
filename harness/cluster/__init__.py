"""The cluster: embedded or existing Ray clusters, per-node agents, the process
reaper, and `ray_private`, the one module that touches Ray's private APIs."""
