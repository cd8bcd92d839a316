# SPLASH-2 Radix, 2^13 keys: the output in order, and its multiset hash equal to the input's.
app_test(radix ARGS --size test)
