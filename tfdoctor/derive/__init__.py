"""Derivations: pure functions of facts that several checks share.

The layering is facts (what probes read) → derivations and knowledge (what those facts mean, and the
release tables in `tfdoctor.knowledge`) → checks (what is wrong). Nothing here touches the machine.
"""
