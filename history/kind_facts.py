"""What the causal model may take as given about a fault kind, declared by the kind itself.

The model never names a fault kind: each kind (faults/*.py) declares these facts on its class,
scenarios/verdict.py hands them over in `Declared.kinds`, and the rules read them by the kind the
history recorded. A kind that declares nothing (a plugin's) has every fact False: the model then
takes nothing about it as given (no process it killed, no node it removed), which can make it
find less, never a contradiction that is not there.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KindFacts:
    #: the pid it hits is SIGKILLed: no event of that process may follow
    kills_process: bool = False
    #: the node it hits is removed (at once, or when a drain runs out): no event of that node may follow
    removes_node: bool = False
    #: it drains its node for preemption with a deadline (`target_hit.deadline_ms`, notice `notice_s`)
    drains_node: bool = False
    #: it cuts its target off (paused, partitioned, hung, degraded): the target's events may arrive late
    cuts_off: bool = False
    #: it damages files of a registered checkpoint (`target_hit.path` lies in `target_hit.checkpoint`)
    damages_checkpoint: bool = False


NONE = KindFacts()
