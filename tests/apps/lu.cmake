# SPLASH-2 LU (contiguous blocks), N = 256: every element of L*U against A, within the rounding bound.
app_test(lu ARGS --size test)
