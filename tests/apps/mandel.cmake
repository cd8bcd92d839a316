# Mandelbrot with a lock-protected tile queue (seed 001), 512 x 512, 64 tiles:
# every iteration count equal to a sequential computation.
app_test(mandel ARGS --size test)
