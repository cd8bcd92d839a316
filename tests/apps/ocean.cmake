# SPLASH-2 Ocean (row bands, multigrid), 66 x 66, 3 steps: bit for bit against a sequential run.
app_test(ocean ARGS --size test)
