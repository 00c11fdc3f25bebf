"""What the pre-job hook (`tfdoctor check` on a live machine) must never import: each costs it a
millisecond or more of a budget of 3 % of `import tensorflow` (issue 26, benchmarks/check_speed.py), and
none is needed to check a healthy machine. Only a regular install shows it: an editable one's import hook
loads pathlib, contextlib and urllib.parse before tfdoctor runs. A probe that starts a child (numactl's
binding test on a host of several NUMA nodes, ptxas) needs subprocess, and subprocess imports contextlib."""

NEEDED_BY_SUBPROCESS = ("contextlib",)
HOOK_NEVER_IMPORTS = ("click", "dataclasses", "inspect", "importlib.metadata", "typing", "pathlib", "contextlib",
                      "urllib.parse", "fnmatch", "ntpath", "ipaddress", "datetime", "ast", "math")

# Runs `tfdoctor check` as the console script does and prints, on stderr, which of the names it imported.
REPORT_IMPORTS = (
    "import sys\n"
    "names = sys.argv[1].split(',')\n"
    "sys.argv = ['tfdoctor', 'check', '--quiet']\n"
    "from tfdoctor.console import main\n"
    "try:\n"
    "    main()\n"
    "finally:\n"
    "    print(' '.join(n for n in names if n in sys.modules), file=sys.stderr)\n"
)
