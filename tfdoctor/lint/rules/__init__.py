"""Built-in lint rules, family SRC. One module per area; each registered under `tfdoctor.lint_rules`."""
