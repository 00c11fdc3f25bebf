"""`tfdoctor explain --log`: recognise the messages a log holds, say what each means, and run the checks
that diagnose its cause.

The message table is data (tfdoctor/knowledge/log_messages.toml, how to extend it: docs/log-messages.md);
`messages` loads and matches it, `read` reads a log bounded in size and time, `explanation` joins the
matches with the report of the related checks (pure), `render` writes text or JSON. Nothing here is on the
path of `tfdoctor check`: cli.py imports these modules only when --log is given.
"""
