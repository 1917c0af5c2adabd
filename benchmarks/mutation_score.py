"""The mutation engine's figures (ftharness.reports.mutation): mutants generated, equivalent,
killed and surviving; per operator, per rule and per edited field, with the generic rules (a
process's clock order, parse, seal, numbering, types) set aside: a mutant counts as killed by a
semantic rule only when a reason other than a generic one refuses it, and as killed-generic-only
otherwise; the controls that must PASS; the survivors grouped into classes (operator x kind x field).
Sources: the recorded histories of tests/data below, and every folder that
tests/data/controls/SOURCES.txt lists (one a line, relative to the repository) when it exists.

    python -P benchmarks/mutation_score.py                          # every mutant (long: see --jobs)
    python -P benchmarks/mutation_score.py --sample 300             # 300 per history, seeded
    python -P benchmarks/mutation_score.py --per-operator 40        # 40 per operator per history
    python -P benchmarks/mutation_score.py --consistent-only        # the self-consistent operators only
    python -P benchmarks/mutation_score.py --json /tmp/figures.json # everything, as JSON
"""

import argparse
import json
import os
import sys

from ftharness.reports.mutation import CONSISTENT_OPERATORS, GENERIC, run, sources_list

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
SOURCES = ("kill-worker", "preempt-node", "torchrun-kill-worker", "torchrun-kill-node")
CONTROLS_LIST = os.path.join(DATA, "controls", "SOURCES.txt")


def _pct(a: int, b: int) -> str:
    return f"{a / b:.1%}" if b else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=None, help="at most N mutants per history (seeded)")
    ap.add_argument("--per-operator", type=int, default=None, help="at most N mutants per operator per history")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="processes judging in parallel")
    ap.add_argument("--consistent-only", action="store_true", help="only the self-consistent operators")
    ap.add_argument("--single-only", action="store_true", help="only the single-field operators")
    ap.add_argument("--operators", default=None, help="comma-separated operator names to keep")
    ap.add_argument("--no-controls-list", action="store_true", help="leave out tests/data/controls/SOURCES.txt")
    ap.add_argument("--survivors", type=int, default=30, help="how many survivor classes to list")
    ap.add_argument("--fields", type=int, default=60, help="how many per-field rows to print")
    ap.add_argument("--json", default=None, help="write every figure, class and survivor to this path")
    ap.add_argument("--markdown", default=None, help="write the tables of docs/mutation-figures.md to this path")
    ap.add_argument("--progress", action="store_true", help="print progress to stderr")
    ap.add_argument("folders", nargs="*", help="recorded results folders (default: tests/data's and SOURCES.txt's)")
    args = ap.parse_args(argv)
    folders = args.folders or [os.path.join(DATA, s) for s in SOURCES]
    if not args.folders and not args.no_controls_list:
        folders += [f for f in sources_list(CONTROLS_LIST) if os.path.abspath(f) not in map(os.path.abspath, folders)]

    def progress(n, total):
        if n % 200 == 0 or n == total:
            print(f"  {n}/{total}", file=sys.stderr, flush=True)

    score = run(folders, sample=args.sample, seed=args.seed, per_operator=args.per_operator,
                single=not args.consistent_only, consistent=not args.single_only,
                operators=args.operators.split(",") if args.operators else None, jobs=args.jobs,
                progress=progress if args.progress else None)
    j = score.to_json()
    t = j["totals"]
    judged, killed = t["judged"], t["killed"]
    print(f"sources ({len(folders)}): {', '.join(os.path.basename(os.path.normpath(f)) for f in folders)}")
    print(f"sampling: {j['sample']}")
    print(f"mutants generated: {t['mutants']} in {score.took_s:.0f} s")
    by_rule = ", ".join(f"{r} {n}" for r, n in t["equivalent_by_rule"].items())
    print(f"equivalent (by rule): {t['equivalent']} ({by_rule}); "
          f"of them refused anyway: {t['equivalent_but_refused']}")
    print(f"non-equivalent: {judged}; killed {killed}, surviving {t['surviving']}; kill rate {_pct(killed, judged)}")
    print(f"  killed by a semantic rule: {t['semantic_killed']} ({_pct(t['semantic_killed'], judged)} of the "
          f"non-equivalent: the semantic kill rate)")
    print(f"  killed by generic rules only ({', '.join(sorted(GENERIC))}): {t['generic_only']} "
          f"({_pct(t['generic_only'], judged)})  {j['generic_only_by_killer']}")
    print(f"verdicts of the non-equivalent: {t['verdicts']}")
    print(f"controls: {t['controls']}, judged wrongly: {t['controls_wrong']}")
    for c in j["controls_wrong"]:
        print(f"  CONTROL {c['name']}: {c['verdict']}: {(c['reasons'] or ['?'])[0][:200]}")
    print("per operator (judged, killed, semantic, generic-only, surviving, semantic rate):")
    for op, r in sorted(j["per_operator"].items(), key=lambda x: (x[0] in CONSISTENT_OPERATORS, x[0])):
        mark = "*" if op in CONSISTENT_OPERATORS else " "
        print(f" {mark}{op:20s} {r['judged']:6d} {r['killed']:6d} {r['semantic']:6d} {r['generic_only']:6d} "
              f"{r['surviving']:6d}  {_pct(r['semantic'], r['judged'])}")
    print("  (* self-consistent operators)")
    print("per rule: the first semantic reason of each kill (generic rules set aside):")
    for rule, n in j["per_rule"].items():
        print(f"  {rule:28s} {n:6d}")
    print("first reason of each kill, generic rules included:")
    print("  " + ", ".join(f"{k} {n}" for k, n in j["first_killer"].items()))
    rows = sorted(j["per_field"].items(), key=lambda x: (-(x[1]["surviving"] + x[1]["generic_only"]), x[0]))
    print(f"per field (kind.field; judged, killed, semantic, generic-only, surviving), "
          f"the {min(args.fields, len(rows))} of {len(rows)} with most survivors + generic-only:")
    for f, r in rows[:args.fields]:
        print(f"  {f[:48]:48s} {r['judged']:6d} {r['killed']:6d} {r['semantic']:6d} {r['generic_only']:6d} "
              f"{r['surviving']:6d}")
    classes = j["survivor_classes"]
    print(f"survivor classes (operator x kind x field): {len(classes)}, survivors {t['surviving']}")
    for c in classes[:args.survivors]:
        print(f"  {c['count']:4d}  {c['operator']:18s} {c['kind']:24s} {c['field'][:40]:40s} e.g. {c['examples'][0]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(j, f, indent=1, sort_keys=False)
        print(f"json: {args.json}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(j, folders))
        print(f"markdown: {args.markdown}")
    return 0


def markdown(j, folders) -> str:
    """The figures as the markdown tables of docs/mutation-figures.md."""
    t = j["totals"]
    by_rule = ", ".join(f"{r} {n}" for r, n in t["equivalent_by_rule"].items())
    semantic = f"{t['semantic_killed']} ({_pct(t['semantic_killed'], t['judged'])})"
    cols = "| {} | {} | {} | {} | {} | {} | {} |"
    out = ["| figure | count |", "|---|---|",
           f"| sources | {len(folders)}: {', '.join(os.path.basename(os.path.normpath(f)) for f in folders)} |",
           f"| sampling | {j['sample']['per_operator'] or 'every'} mutants per operator per history, "
           f"{j['sample']['per_history'] or 'no'} cap per history, seed {j['sample']['seed']} |",
           f"| mutants judged | {t['mutants']} |",
           f"| equivalent by rule | {t['equivalent']} ({by_rule}); "
           f"refused anyway: {t['equivalent_but_refused']} |",
           f"| non-equivalent | {t['judged']}: {', '.join(f'{k} {v}' for k, v in sorted(t['verdicts'].items()))} |",
           f"| killed (any reason) | {t['killed']} ({_pct(t['killed'], t['judged'])}) |",
           f"| **killed by a semantic rule** | **{semantic}** |",
           f"| killed by generic rules only | {t['generic_only']} ({_pct(t['generic_only'], t['judged'])}): "
           f"{', '.join(f'{k} {v}' for k, v in j['generic_only_by_killer'].items())} |",
           f"| surviving | {t['surviving']} ({_pct(t['surviving'], t['judged'])}) |",
           f"| controls judged wrongly | {t['controls_wrong']} of {t['controls']} |", ""]
    out += ["Per operator (* self-consistent):", "",
            cols.format("operator", "judged", "killed", "semantic", "generic only", "surviving", "semantic rate"),
            cols.format(*["---"] * 7)]
    for op, r in sorted(j["per_operator"].items(), key=lambda x: (x[0] in CONSISTENT_OPERATORS, x[0])):
        name = f"*{op}" if op in CONSISTENT_OPERATORS else op
        out.append(cols.format(name, r["judged"], r["killed"], r["semantic"], r["generic_only"], r["surviving"],
                               _pct(r["semantic"], r["judged"])))
    out += ["", "Per rule: the first semantic reason of each kill (generic rules set aside):", "",
            "| rule | kills | share of semantic kills |", "|---|---|---|"]
    for rule, n in j["per_rule"].items():
        out.append(f"| `{rule}` | {n} | {_pct(n, t['semantic_killed'])} |")
    rows = sorted(j["per_field"].items(), key=lambda x: (-(x[1]["surviving"] + x[1]["generic_only"]), x[0]))
    out += ["", f"Per field (kind.field of the edit; `*` a whole event, `process:`/`node` a whole process or node; "
                f"the {min(60, len(rows))} of {len(rows)} fields with the most survivors and generic-only kills):", "",
            cols.format("field", "judged", "killed", "semantic", "generic only", "surviving", "semantic rate"),
            cols.format(*["---"] * 7)]
    for f, r in rows[:60]:
        out.append(cols.format(f"`{f}`", r["judged"], r["killed"], r["semantic"], r["generic_only"], r["surviving"],
                               _pct(r["semantic"], r["judged"])))
    shown = j["survivor_classes"][:40]
    out += ["", f"Survivor classes (operator x kind x field): the {len(shown)} largest of "
                f"{len(j['survivor_classes'])} (every one is in the JSON):", "",
            "| survivors | operator | kind | field | example |", "|---|---|---|---|---|"]
    for c in shown:
        out.append(f"| {c['count']} | {c['operator']} | {c['kind']} | {c['field']} | `{c['examples'][0]}` |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
