"""How long `tfdoctor explain --log` takes over a large training log (the 8 MiB tail it reads at most).

The log is ~100,000 lines of Keras progress and TensorFlow start-up noise with a dozen known messages
mixed in (one of each kind the tests use). Printed next to baselines measured in the same run:
  - `python -c pass`: what starting Python costs at all;
  - `grep -c -F -f patterns` over the same file with every row's fixed words: the floor for scanning it;
  - in process: `find_messages` alone against one `str.count` over the text.

The command runs without --facts, so it also probes this machine for the related checks, as a user's run
does.

Usage: python benchmarks/explain_log.py [--lines 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import median_ms, run_once

NOISE = [
    "469/469 [==============================] - 3s 6ms/step - loss: 0.2817 - accuracy: 0.9183",
    "Epoch 7/50",
    "2024-05-06 07:08:09.101112: I tensorflow/core/common_runtime/executor.cc:1197] [/device:CPU:0] (DEBUG INFO) "
    "Executor start aborting (this does not indicate an error and you can ignore this message)",
]


def write_log(path: Path, lines: int) -> int:
    from tfdoctor.logs.messages import known_messages

    known = [example for message in known_messages() for example in message.examples[:1]]
    step = max(1, lines // len(known))
    with path.open("w", encoding="utf-8") as handle:
        for i in range(lines):
            handle.write((known[(i // step) % len(known)] if i % step == 0 else NOISE[i % len(NOISE)]) + "\n")
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tfdoctor = shutil.which("tfdoctor") or str(Path(sys.executable).with_name("tfdoctor"))
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "train.log"
        size = write_log(log, args.lines)
        words = Path(folder) / "words.txt"
        from tfdoctor.logs.messages import find_messages, known_messages

        words.write_text("\n".join(m.examples[0][:30] for m in known_messages()) + "\n")
        runs = {
            "tfdoctor explain --log": [tfdoctor, "explain", "--log", str(log)],
            "python -c pass": [sys.executable, "-c", "pass"],
            "grep -c -F -f words": ["grep", "-c", "-F", "-f", str(words), str(log)],
        }
        print(f"log: {args.lines} lines, {size / 2**20:.1f} MiB; load average {os.getloadavg()[0]:.1f}")
        for name, command in runs.items():
            seconds = statistics.median(run_once(command).seconds for _ in range(args.repeat))
            print(f"  {name:<28} {seconds * 1000:8.0f} ms (median of {args.repeat})")
        text = log.read_text(encoding="utf-8")
        print(f"  in process: find_messages {median_ms(lambda: find_messages(text), runs=args.repeat):.0f} ms, "
              f"str.count {median_ms(lambda: text.count(chr(10)), runs=args.repeat):.1f} ms")


if __name__ == "__main__":
    main()
