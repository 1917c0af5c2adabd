"""The mutation engine's figures (ftharness.reports.mutation): mutants generated, equivalent,
killed and surviving, per operator, per edited event kind and per part of the judgement that
refused them, over the recorded histories of tests/data; the controls that must PASS; and the
survivors listed.

    python -P benchmarks/mutation_score.py                 # every mutant (a few minutes)
    python -P benchmarks/mutation_score.py --sample 300    # 300 per history, seeded
    python -P benchmarks/mutation_score.py --survivors 50  # list up to 50 survivors
"""

import argparse
import os
import sys
import time
from collections import Counter

from ftharness.reports.mutation import run

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
SOURCES = ("kill-worker", "preempt-node", "torchrun-kill-worker", "torchrun-kill-node")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=None, help="at most N mutants per history (seeded)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--survivors", type=int, default=30, help="how many survivors to list")
    ap.add_argument("folders", nargs="*", help="recorded results folders (default: tests/data's)")
    args = ap.parse_args(argv)
    folders = args.folders or [os.path.join(DATA, s) for s in SOURCES]
    t0 = time.time()
    score = run(folders, sample=args.sample, seed=args.seed)
    took = time.time() - t0
    total = [o for o in score.outcomes if not o.mutant.control]
    judged, survivors = score.judged, score.survivors
    print(f"mutants generated: {len(total)} over {len(folders)} histories in {took:.0f} s")
    print(f"equivalent (by rule): {len(score.equivalent)} "
          f"({', '.join(f'{r} {n}' for r, n in Counter(o.mutant.equivalent for o in score.equivalent).most_common())})")
    print(f"non-equivalent: {len(judged)}; killed {len(judged) - len(survivors)}, surviving {len(survivors)}; "
          f"kill rate {score.kill_rate:.1%}")
    verdicts = Counter(o.verdict for o in judged)
    print(f"verdicts of the non-equivalent: {dict(verdicts)}")
    print("killed by (the first part of the judgement that refused it):")
    for k, n in score.by_killer().most_common():
        print(f"  {k:24s} {n}")
    print("per operator (judged, killed, surviving):")
    for op, n, k, s in score.table():
        print(f"  {op:18s} {n:6d} {k:6d} {s:6d}")
    print("per edited event kind (judged, surviving):")
    for kind, n, s in score.by_kind():
        print(f"  {kind:22s} {n:6d} {s:6d}")
    wrong = score.controls_wrong
    controls = [o for o in score.outcomes if o.mutant.control]
    print(f"controls: {len(controls)}, judged wrongly: {len(wrong)}")
    for o in wrong:
        print(f"  CONTROL {o.mutant.name}: {o.verdict}: {(o.reasons or ['?'])[0][:200]}")
    if survivors:
        print(f"survivors (first {min(args.survivors, len(survivors))}):")
        for o in survivors[:args.survivors]:
            print(f"  {o.mutant.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
