"""Today's linter over every held-out set judged by tier (the fifth to the thirty-seventh), each finding scored by
the label its set's judges wrote: the default settings' precision over the sets chosen by a written rule (the
seventh on), and each rule's figure by tier over all of them — what tfdoctor/knowledge/lint_rule_precision.toml
records as `shown` and `unproven`, and what docs/lint.md quotes "with today's linter" (issue 39, items 3 and 4).

    python benchmarks/lint_heldout_pooled.py [--mirror /work/.mirror] [--first 5] [--last 37] [--default-from 7]
        [--near-copies CSV [--threshold 0.8]]

Each set is linted exactly as its own script lints it (benchmarks/lint_heldout5.py, `findings_of`: the default
settings, and `--select SRC102,SRC103,SRC113` with the defaults). A finding today's linter makes that its set's
judges never saw is counted as unjudged and listed: no figure with one is to be quoted before it is judged.
Labels whose finding today's linter no longer makes are counted, and those judged true listed (issue 39: no
true finding lost). A set whose snapshots are absent is named and left out; with none present, exit 0 and no
figure. With `--near-copies`, the default figure and each tier's are also given without the findings in files
that benchmarks/lint_near_copies.py found at least `--threshold` alike to a file judged before their set (a book's
tutorials copied with their names changed measure the rules on code they were developed on).
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ORDINALS = {5: "fifth", 6: "sixth", 7: "seventh", 8: "eighth", 9: "ninth", 10: "tenth", 11: "eleventh",
            12: "twelfth", 13: "thirteenth", 14: "fourteenth", 15: "fifteenth", 16: "sixteenth",
            17: "seventeenth", 18: "eighteenth", 19: "nineteenth", 20: "twentieth",
            21: "twenty-first", 22: "twenty-second", 23: "twenty-third",
            24: "twenty-fourth", 25: "twenty-fifth", 26: "twenty-sixth",
            27: "twenty-seventh", 28: "twenty-eighth",
            29: "twenty-ninth", 30: "thirtieth",
            31: "thirty-first", 32: "thirty-second",
            33: "thirty-third", 34: "thirty-fourth", 35: "thirty-fifth", 36: "thirty-sixth",
            37: "thirty-seventh"}


def breakdown(per_set: dict[int, Counter]) -> str:
    """`10 true, 1 debatable of 11 on the fifth; …`, the form the precision table records."""
    parts = []
    for number in sorted(per_set):
        counts = per_set[number]
        judged = sum(counts[label] for label in ("true", "debatable", "false"))
        if not judged:
            continue
        said = ", ".join(f"{counts[label]} {label}" for label in ("true", "debatable", "false")
                         if counts[label] or label == "true")
        parts.append(f"{said} of {judged} on the {ORDINALS.get(number, f'set {number}')}")
    return "; ".join(parts)


def near_copies(path: Path, threshold: float) -> dict[str, set[tuple[str, str]]]:
    """Set name → the (repository, path) of its judged files at least `threshold` alike to a file judged before
    it, from benchmarks/lint_near_copies.py --write's CSV (set,repo,path,ratio,nearest)."""
    found: dict[str, set[tuple[str, str]]] = defaultdict(set)
    with path.open(newline="") as handle:
        for number, row in enumerate(csv.DictReader(handle), start=2):
            try:
                if float(row["ratio"]) >= threshold:
                    found[row["set"]].add((row["repo"], row["path"]))
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"{path}:{number}: not a row of set,repo,path,ratio,nearest") from None
    return found


def left(found: list[tuple[tuple[str, str, str, str], str]], copied: set[tuple[str, str]]
         ) -> list[tuple[tuple[str, str, str, str], str]]:
    """The findings ((key, tier) pairs) whose file (repository, path) is not among `copied`."""
    return [(key, tier) for key, tier in found if key[:2] not in copied]


def figure(counts: Counter) -> str:
    judged = counts["true"] + counts["debatable"] + counts["false"]
    if not judged:
        return "no finding judged"
    strict, lenient = counts["true"] / judged, (counts["true"] + counts["debatable"]) / judged
    return (f"{counts['true']} of {judged} strict ({100 * strict:.1f} %), {counts['true'] + counts['debatable']} "
            f"lenient ({100 * lenient:.1f} %)" + (f"; {counts['unjudged']} UNJUDGED" if counts["unjudged"] else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"), help="where the fetch snapshots are")
    parser.add_argument("--first", type=int, default=5)
    parser.add_argument("--last", type=int, default=37)
    parser.add_argument("--default-from", type=int, default=7,
                        help="the first set the default figure pools (the seventh: the first chosen by a written rule)")
    parser.add_argument("--near-copies", type=Path,
                        help="benchmarks/lint_near_copies.py --write's CSV: each figure is also given without the "
                             "findings in files at least --threshold alike to a file judged before their set")
    parser.add_argument("--threshold", type=float, default=0.8)
    args = parser.parse_args(argv)
    if not 0.0 < args.threshold <= 1.0:
        print("lint_heldout_pooled: --threshold is a ratio above 0 and at most 1", file=sys.stderr)
        return 2
    if args.near_copies is not None and not args.near_copies.is_file():
        print(f"lint_heldout_pooled: no near-copies CSV at {args.near_copies} "
              "(benchmarks/lint_near_copies.py heldout5 ... --write CSV writes one)", file=sys.stderr)
        return 2
    try:
        copies = near_copies(args.near_copies, args.threshold) if args.near_copies else None
    except ValueError as exc:
        print(f"lint_heldout_pooled: {exc}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    from lint_corpus import materialise
    from lint_heldout4 import label_of, labels_gone, read_labels, snapshots_or_skip, tfdoctor_commit
    from lint_heldout5 import SELECTED, findings_of

    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules

    registry = load_lint_rules()
    default_rules = select_lint_rules(registry.rules)
    selected_rules = select_lint_rules(registry.rules, [*SELECTED, *(r.code for r in default_rules)])
    default_by_set: dict[int, Counter] = {}
    tiers: dict[str, dict[int, Counter]] = defaultdict(lambda: defaultdict(Counter))
    own_default_by_set: dict[int, Counter] = {}  # without the near copies, when asked
    own_tiers: dict[str, Counter] = defaultdict(Counter)
    unjudged: list[str] = []
    lost_true: list[str] = []
    gone = 0
    skipped = []
    print(f"tfdoctor at {tfdoctor_commit()}")
    for number in range(args.first, args.last + 1):
        manifest = HERE / "lint_corpus" / f"heldout{number}.toml"
        repos = snapshots_or_skip(manifest, args.mirror)
        if repos is None:
            skipped.append(number)
            continue
        labels = read_labels(HERE / "lint_corpus" / f"heldout{number}_labels.csv")
        with tempfile.TemporaryDirectory() as cache:
            roots, _absent = materialise(args.mirror, Path(cache), repos)
            default = findings_of(roots, default_rules)[0]
            selected = findings_of(roots, selected_rules)[0]
        default_by_set[number] = Counter(label_of(labels, key, tier) for key, tier in default)
        copied = copies.get(f"heldout{number}", set()) if copies is not None else set()
        own_default_by_set[number] = Counter(label_of(labels, key, tier) for key, tier in left(default, copied))
        for key, tier in left(selected, copied):
            own_tiers[f"{key[3]}/{tier}"][label_of(labels, key, tier)] += 1
        for key, tier in selected:
            label = label_of(labels, key, tier)
            tiers[f"{key[3]}/{tier}"][number][label] += 1
            if label == "unjudged":
                unjudged.append(f"set {number}: " + " ".join(key))
        for key in labels_gone(labels, selected):
            gone += 1
            if labels[key] == "true":
                lost_true.append(f"set {number}: " + " ".join(key))
        print(f"  {ORDINALS.get(number, number)}: {len(repos)} repositories, default {figure(default_by_set[number])}")
    if not default_by_set:
        print("no held-out snapshots here: no figure")
        return 0
    pooled = sum((c for n, c in default_by_set.items() if n >= args.default_from), Counter())
    print(f"\ndefault settings over the {ORDINALS.get(args.default_from)} to {ORDINALS.get(args.last)} sets: "
          f"{figure(pooled)}")
    if copies is not None:
        own = sum((c for n, c in own_default_by_set.items() if n >= args.default_from), Counter())
        print(f"  without the findings in near copies of code judged before their set (ratio >= {args.threshold}, "
              f"{args.near_copies.name}): {figure(own)}")
    print("\nby rule and tier, all sets (what lint_rule_precision.toml records):")
    for name in sorted(tiers):
        total = sum(tiers[name].values(), Counter())
        print(f"  {name}: {figure(total)}\n      {breakdown(tiers[name])}")
        if copies is not None and own_tiers[name] != total:
            print(f"      without the near copies: {figure(own_tiers[name])}")
    print(f"\nfindings no set's judges saw: {len(unjudged)}" + "".join(f"\n  {u}" for u in unjudged))
    print(f"labels whose finding is no longer made: {gone}, of them judged true: {len(lost_true)}"
          + "".join(f"\n  {u}" for u in lost_true))
    if skipped:
        print("sets left out, their snapshots absent: " + ", ".join(str(n) for n in skipped))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
