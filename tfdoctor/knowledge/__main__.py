"""`python -m tfdoctor.knowledge`: rewrite compiled/<name>.json from every <name>.toml (see COMPILED)."""

import os
import sys

from tfdoctor.fixes.write import WriteError, write_file
from tfdoctor.knowledge import COMPILED, available, compile_table

os.makedirs(COMPILED, exist_ok=True)
for name in available():
    try:
        # The one writer: a temporary file renamed over the twin (a link there is replaced, not followed), so
        # the pre-job hook never reads half a twin.
        write_file(os.path.join(COMPILED, f"{name}.json"), compile_table(name), force=True)
    except WriteError as exc:
        sys.exit(f"python -m tfdoctor.knowledge: {exc}")
    print(f"wrote {os.path.basename(COMPILED)}/{name}.json")
