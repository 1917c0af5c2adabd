"""A toy ftharness plugin: one fault kind (`touch_file`) and one property (`touches_recorded`).

tests/test_plugins.py installs it, in a temporary folder, as a distribution whose entry
points are those docs/plugins.md shows; nothing of ftharness changes for it.
"""

from typing import Any, Dict, Literal, Optional

from pydantic import Field

from ftharness.faults.base import LANDED, MISSED, Fault, FaultContext, FaultSpecBase, FaultView, Landing, join_storage


class TouchFileSpec(FaultSpecBase):
    """Write a small file into the run's storage folder (nothing fails: a toy)."""

    kind: Literal["touch_file"]
    name: str = Field("toy-marker", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    size_bytes: Optional[int] = Field(None, ge=1, le=1 << 20)


class TouchFile(Fault):
    """Writes a small marker file into the run's storage folder: a toy fault kind."""

    kind = "touch_file"
    Spec = TouchFileSpec
    budget = None                       # it fails nothing, so Ray charges nothing
    causes = None                       # no failure of its own: explore's model expects none
    runtimes = ("ray_train", "torchrun")
    runs_in = "driver"

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        fs, root = ctx.storage()
        path = join_storage(root, self.spec.name)
        fs.create_dir(root, recursive=True)
        with fs.open_output_stream(path) as f:
            f.write(b"x" * int(self.spec.size_bytes or 16))
        return {"path": path, "how": "touch"}

    def landing(self, view: FaultView) -> Landing:
        path = (view.hit or {}).get("path")
        if not path:
            return Landing(MISSED, f"touch_file at seq {view.seq} recorded no path")
        return Landing(LANDED, f"touch_file wrote {path} at seq {view.seq}")


class TouchesRecorded:
    """touches_recorded: every touch_file the injector did records the file it wrote."""

    @staticmethod
    def check(events, context):
        from ftharness.scenarios.properties.base import not_judged, result

        events = getattr(events, "events", events)
        done = [e for e in events if e.get("kind") == "fault_injected" and e.get("fault_kind") == "touch_file"]
        if not done:
            return not_judged("touches_recorded", "no touch_file was injected")
        bad = [f"fault {e.get('fault')} (seq {e.get('seq')}) recorded no path"
               for e in done if not (e.get("target_hit") or {}).get("path")]
        return result("touches_recorded", bad, [], f"{len(done)} touch_file fault(s), each with its path")


touches_recorded = TouchesRecorded()
