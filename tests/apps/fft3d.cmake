# 3-D FFT (seed 001), 32^3 points: checked against a direct DFT,
# Parseval's identity and the inverse transform.
app_test(fft3d ARGS --size test)
