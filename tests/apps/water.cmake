# SPLASH-2 Water-Nsquared (bench/apps/water.c): 343 molecules, 20 steps;
# checked against a sequential run and for energy conservation.
app_test(water ARGS --size test)
