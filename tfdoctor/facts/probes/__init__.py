"""Probes: the only code that touches the machine. One module per area, each fills facts sections."""
