# Matrix multiply (seed 002), 256 x 256 integer-valued doubles: every element
# of C exactly equal to a sequential product.
app_test(matmul ARGS --size test)
