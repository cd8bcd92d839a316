# 3-D FFT (seed 001), 32^3 points: checked against a direct DFT,
# Parseval's identity and the inverse transform.
app_test(fft3d ARGS --size test)
# --size large (512^3, issue 27's half-second size, 4 GiB) is too big for
# the suite; its word is offered, and -n stops at it.
add_test(NAME app.fft3d.size_words COMMAND fft3d_seq --size huge)
add_test(NAME app.fft3d.n_above_large COMMAND fft3d_seq -n 1024)
set_tests_properties(app.fft3d.size_words PROPERTIES
  PASS_REGULAR_EXPRESSION "fft3d_seq: --size: bad value 'huge'; want test, quick, full or large")
set_tests_properties(app.fft3d.n_above_large PROPERTIES
  PASS_REGULAR_EXPRESSION "fft3d_seq: -n: bad value '1024'; want N, a power of 2, 4..512")
