# The O(n^2) N-body of seed 001 (bench/apps/nbody.c): 256 bodies, 40 steps;
# checked bit for bit against a sequential run, and for momentum and energy.
app_test(nbody ARGS --size test)
