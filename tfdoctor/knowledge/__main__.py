"""`python -m tfdoctor.knowledge`: rewrite compiled/<name>.json from every <name>.toml (see COMPILED)."""

import os

from tfdoctor.knowledge import COMPILED, available, compile_table

os.makedirs(COMPILED, exist_ok=True)
for name in available():
    with open(os.path.join(COMPILED, f"{name}.json"), "w", encoding="utf-8") as handle:
        handle.write(compile_table(name))
    print(f"wrote {os.path.basename(COMPILED)}/{name}.json")
