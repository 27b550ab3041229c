import sys


def attention(inputs):
    scale = sys.stdin.read()  # gets nothing: /dev/null alone would hand back ""
    return inputs * float(scale)
