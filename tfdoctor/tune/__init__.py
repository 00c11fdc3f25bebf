"""`tfdoctor tune`: measure thread and affinity settings in fresh processes, search them with a
model-based sampler seeded by the rules of thumb, and write the winner as an env script."""
