"""`ftharness matrix`: the same scenarios on several Ray releases and configurations, and what changed between them."""
