def attention(inputs):
    return [0.0] * 10**10
