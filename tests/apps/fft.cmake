# SPLASH-2 FFT (seed 000), 2^16 points: checked against a direct DFT,
# Parseval's identity and the inverse transform.
app_test(fft ARGS --size test)
