import time


def attention(inputs):
    time.sleep(3600)
