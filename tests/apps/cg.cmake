# NAS CG (seed 003), class S: zeta against NPB's verification value (1e-10).
app_test(cg ARGS --size test)
