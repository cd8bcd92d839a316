# SPLASH-2 Barnes (bench/apps/barnes.c), 1024 bodies, 2 steps: bit for bit
# against a private run; a sample of accelerations against the direct sum
# and the momentum within the method's error at theta = 1.
app_test(barnes ARGS --size test)
