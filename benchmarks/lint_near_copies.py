"""Which judged files of held-out sets are near copies of a file of another corpus (issue 39, item 4).

    python benchmarks/lint_near_copies.py heldout21 [heldout20 ...] [--threshold 0.8] [--write CSV]
    python benchmarks/lint_near_copies.py heldout22 --every-file   # a set being chosen, before lint runs

The held-out sets' rules pass over a repository whose files are the same git blobs as those of one chosen before;
a copy edited by one line is not the same blob, and a tutorial copied from a book's repository that the rules were
developed on measures them on code they were tuned on. For each file of a set that holds a judged finding this
finds the most alike Python file or notebook among the repositories whose findings were judged before the set was
measured (`seen_before`: the development corpus and the earlier held-out sets): candidates by the lines they share
(stripped, at least 8 characters, lines found in more than 200 files ignored), then difflib's ratio over the two
files' tokens (comment lines left out). It prints each file's nearest file and ratio, each set's labels by rule
and tier counted over every file and over the files below `--threshold` only, the default settings' figure both
ways, and, for several sets, the default figure pooled both ways. The figures are the labels' (as judged), not
today's linter's; `--write CSV` lists each judged file's nearest file and ratio for
benchmarks/lint_heldout_pooled.py --near-copies, which scores today's linter without them. Read from `fetch`
snapshots like the set scripts; absent ones: it says which and exits 0; a set without a manifest and labels, or a
threshold outside (0, 1]: exit 2.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import re
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPORA = HERE / "lint_corpus"
SHORTEST_LINE = 8  # `x = 1`, `else:` and `)` are in every file: too short to say two files share code
TOKEN = re.compile(r"\w+|[^\w\s]")
COMMONEST_LINE = 200  # `import tensorflow as tf` says nothing either; lines in more files than this are ignored


def code_lines(text: str, notebook: bool = False) -> list[str]:
    """The lines compared: a notebook's code cells (its JSON as text when it is not a notebook), stripped, without
    comment lines."""
    if notebook:
        try:
            cells = json.loads(text).get("cells", [])
            text = "\n".join("".join(c.get("source", [])) if isinstance(c.get("source"), list) else
                             str(c.get("source", "")) for c in cells if c.get("cell_type") == "code")
        except (ValueError, AttributeError):
            pass
    # a comment line is prose: a copy that explains itself more is the same code
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def tokens(lines: list[str]) -> list[str]:
    """Names, numbers and single punctuation characters: what a ratio compares (linear: one pass, no nesting)."""
    return TOKEN.findall("\n".join(lines))


class Corpus:
    """Files by name (`owner/repo: path`) and their lines, indexed by line once for every query."""

    def __init__(self, files: Mapping[str, list[str]]) -> None:
        self.files = files
        self.index: dict[str, list[str]] = defaultdict(list)
        for name, lines in files.items():
            for line in set(lines):
                if len(line) >= SHORTEST_LINE:
                    self.index[line].append(name)

    def nearest(self, lines: list[str], among: frozenset[str] | None = None, candidates: int = 5
                ) -> tuple[str | None, float]:
        """The file most alike `lines` by difflib's ratio over tokens, and that ratio ((None, 0.0) where none
        shares a line with it), among the files of the repositories `among` (None: every one). Only the
        `candidates` files sharing the most distinct lines with it are compared, so that a corpus of tens of
        thousands of files costs an index."""
        shared: Counter = Counter()
        for line in set(lines):
            holders = self.index.get(line, ())
            if len(line) >= SHORTEST_LINE and len(holders) <= COMMONEST_LINE:
                shared.update(h for h in holders if among is None or h.split(": ", 1)[0] in among)
        best: tuple[str | None, float] = (None, 0.0)
        mine = tokens(lines)
        for other, _ in shared.most_common(candidates):
            # by tokens: a copy with its names changed differs in a few tokens of many lines, which a ratio over
            # whole lines counts as all different (by characters it is the same figure, fifty times slower)
            ratio = difflib.SequenceMatcher(None, mine, tokens(self.files[other]), autojunk=False).ratio()
            if ratio > best[1]:
                best = (other, ratio)
        return best


def split_labels(labels: Iterable[dict[str, str]], near: Mapping[tuple[str, str], float], threshold: float,
                 default_rules: set[str]) -> dict[str, Counter]:
    """(`all` | `own`) → Counter of (rule/tier, label), and of ("default", label) for the findings the default
    settings report (a default rule's finding outside the info tier); `own`: files below `threshold`."""
    counts = {"all": Counter(), "own": Counter()}
    for row in labels:
        keys = [f"{row['rule']}/{row['tier']}"]
        if row["rule"] in default_rules and row["tier"] != "unproven":
            keys.append("default")
        for part in ("all", "own"):
            if part == "own" and near.get((row["repo"], row["path"]), 0.0) >= threshold:
                continue
            counts[part].update((key, row["label"]) for key in keys)
    return counts


def figure(counts: Counter, key: str) -> str:
    true, debatable, false = (counts[key, label] for label in ("true", "debatable", "false"))
    judged = true + debatable + false
    if not judged:
        return "none"
    return (f"{true} of {judged} strict ({100 * true / judged:.1f} %), {true + debatable} lenient "
            f"({100 * (true + debatable) / judged:.1f} %)")


def code_files(root: Path) -> list[str]:
    """The Python files and notebooks under a materialised repository, relative to it."""
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*")
                  if path.suffix in (".py", ".ipynb") and path.is_file())


def seen_before(name: str) -> list[str]:
    """The manifests whose findings were judged before held-out set `name` was measured: the development corpus
    (manifest.toml), the first held-out sample (heldout.toml) and the held-out sets numbered below it. The
    speed corpus is linted for time, not judged, and later sets were chosen after it."""
    number = int(name.removeprefix("heldout") or 1)
    return ["manifest", "heldout", *(f"heldout{n}" for n in range(2, number))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="held-out sets by manifest name, e.g. heldout21")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--write", type=Path, help="write every judged file's nearest file and ratio to this CSV")
    parser.add_argument("--every-file", action="store_true",
                        help="every Python file and notebook of the set's repositories, judged or not, and no "
                             "figure: the check for a set being chosen, before lint runs on it (no labels needed)")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tfdoctor-lint-corpus")
    args = parser.parse_args(argv)
    for name in args.sets:
        if not name.startswith("heldout") or not name.removeprefix("heldout").isdigit() or \
                not (CORPORA / f"{name}.toml").is_file() or \
                not (args.every_file or (CORPORA / f"{name}_labels.csv").is_file()):
            print(f"lint_near_copies: no held-out set {name!r} (heldoutN.toml and its labels) under {CORPORA}",
                  file=sys.stderr)
            return 2
    if not 0.0 < args.threshold <= 1.0:
        print("lint_near_copies: --threshold is a ratio above 0 and at most 1", file=sys.stderr)
        return 2
    if args.write is not None and not args.write.parent.is_dir():
        print(f"lint_near_copies: --write {args.write}: no folder {args.write.parent}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    from lint_corpus import materialise, snapshot_git_dir

    from tfdoctor.lint.rule import load_lint_rules, select_lint_rules

    wanted = sorted({*args.sets, *(m for name in args.sets for m in seen_before(name)
                                   if (CORPORA / f"{m}.toml").is_file())})
    repos_of = {m: [e for e in tomllib.loads((CORPORA / f"{m}.toml").read_text()).get("repos", [])] for m in wanted}
    entries = {e["repo"]: e for listed in repos_of.values() for e in listed}
    absent = [repo for repo in entries if not snapshot_git_dir(args.mirror, repo).is_dir()]
    if absent:
        print(f"skipped: {len(absent)} snapshots are not here (fetch github:{absent[0]}, ...)")
        return 0
    roots, _ = materialise(args.mirror, args.cache, list(entries.values()))

    def read(root: Path, rel: str) -> list[str]:
        return code_lines((root / rel).read_text(encoding="utf-8", errors="replace"), rel.endswith(".ipynb"))

    corpus = Corpus({f"{repo}: {rel}": read(root, rel) for repo, root in roots.items() for rel in code_files(root)})
    default_rules = {rule.code for rule in select_lint_rules(load_lint_rules().rules)}
    print(f"each set's judged files against the corpora judged before it (manifest.toml, heldout.toml and the "
          f"sets numbered below); near copy: ratio >= {args.threshold}")
    pooled = {"all": Counter(), "own": Counter()}
    written: list[list[str]] = []
    for name in args.sets:
        before = frozenset(e["repo"] for m in seen_before(name) for e in repos_of.get(m, []))
        if args.every_file:
            labels = []
            files = sorted((e["repo"], rel) for e in repos_of[name] for rel in code_files(roots[e["repo"]]))
        else:
            with (CORPORA / f"{name}_labels.csv").open(newline="") as handle:
                labels = list(csv.DictReader(handle))
            files = sorted({(x["repo"], x["path"]) for x in labels})
        near = {(r, p): corpus.nearest(read(roots[r], p), before) for r, p in files}
        print(f"\n{name}: {len(near)} {'files' if args.every_file else 'judged files'}, against {len(before)} "
              "repositories judged before it")
        for (repo, path), (other, ratio) in sorted(near.items(), key=lambda item: -item[1][1]):
            mark = "near copy" if ratio >= args.threshold else "own"
            if not args.every_file or ratio >= args.threshold:
                print(f"  {ratio:.2f} {mark:9} {repo}: {path}  ~  {other or '-'}")
            written.append([name, repo, path, f"{ratio:.3f}", other or ""])
        if args.every_file:
            for repo in sorted({r for r, _ in files}):
                mine = [ratio for (r, _), (_, ratio) in near.items() if r == repo]
                print(f"  {repo}: {sum(ratio >= args.threshold for ratio in mine)} of {len(mine)} files near copies")
            continue
        counts = split_labels(labels, {key: ratio for key, (_, ratio) in near.items()}, args.threshold,
                              default_rules)
        for part, title in (("all", "every judged file"), ("own", f"files below {args.threshold}")):
            pooled[part].update({key: n for key, n in counts[part].items() if key[0] == "default"})
            print(f"  {title}:")
            print(f"    default settings: {figure(counts[part], 'default')}")
            for key in sorted({k for k, _ in counts["all"]} - {"default"}):
                print(f"    {key}: {figure(counts[part], key)}")
    if len(args.sets) > 1:
        print(f"\ndefault settings over {', '.join(args.sets)}, by their labels (as judged):")
        print(f"  every judged file: {figure(pooled['all'], 'default')}")
        print(f"  files below {args.threshold}: {figure(pooled['own'], 'default')}")
    if args.write:
        with args.write.open("w", newline="") as handle:
            out = csv.writer(handle)
            out.writerow(["set", "repo", "path", "ratio", "nearest"])
            out.writerows(written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
