# Blocked Cholesky with a task queue under a lock, N = 256, B = 32:
# ||L L^T - A||_F within Higham's backward-error bound.
app_test(cholesky ARGS --size test)
