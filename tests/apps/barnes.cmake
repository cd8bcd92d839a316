# SPLASH-2 Barnes (bench/apps/barnes.c), 1024 bodies, 2 steps: bit for bit
# against a private run; a sample of accelerations against the direct sum
# and the momentum within the method's error at theta = 1.
app_test(barnes ARGS --size test)

# No steps: one force phase, no kick; the momentum must not move at all
# (its bound, the impulse, is 0).
add_test(NAME app.barnes.no_steps.seq COMMAND barnes_seq --size test -s 0)
dsm_mp_test(NAME app.barnes.no_steps.hlrc.n2 PROG barnes NODES 2 ARGS --size test -s 0)
