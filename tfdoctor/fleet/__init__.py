"""Looking across nodes: `tfdoctor compare` over facts files collected on every node of a job or fleet.

selection.py says which facts matter (a data table); flatten.py turns one Facts into {fact: value};
compare.py finds the facts that differ and the nodes off the majority; render.py writes table or JSON;
command.py is the click command.
"""
