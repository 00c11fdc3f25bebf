"""`python -m tfdoctor.knowledge`: rewrite compiled/<name>.json from every <name>.toml (see COMPILED)."""

from tfdoctor.knowledge import COMPILED, available, compile_table

COMPILED.mkdir(exist_ok=True)
for name in available():
    (COMPILED / f"{name}.json").write_text(compile_table(name), encoding="utf-8")
    print(f"wrote {COMPILED.name}/{name}.json")
