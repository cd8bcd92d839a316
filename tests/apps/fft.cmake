# SPLASH-2 FFT (seed 000), 2^16 points: checked against a direct DFT,
# Parseval's identity and the inverse transform.
app_test(fft ARGS --size test)
# --size large (2^26, issue 27's half-second size) is too big for the
# suite; its word is offered, and a wrong one is named.
add_test(NAME app.fft.size_words COMMAND fft_seq --size huge)
set_tests_properties(app.fft.size_words PROPERTIES
  PASS_REGULAR_EXPRESSION "fft_seq: --size: bad value 'huge'; want test, quick, full or large")
