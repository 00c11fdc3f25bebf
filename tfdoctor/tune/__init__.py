"""`tfdoctor tune`: measure thread and affinity settings in fresh processes, search them with a
model-based sampler seeded by the rules of thumb, and write as an env script only what beat the current
settings beyond the noise (tfdoctor.tune.verify)."""
