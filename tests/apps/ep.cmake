# NAS EP (seed 003), class S: sx and sy against NPB's verification values (1e-8).
app_test(ep ARGS --size test)
