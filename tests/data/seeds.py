"""Every tensor printed in the teaching seeds, copied here so tests never read ../shared.

Each constant names the seed (``../shared/seeds/NNN_*.txt``) and the notebook cell it comes from.
The values are exactly as printed there: 4 decimals.
"""

# Seed 000, cell In [16]: trainable, torch.rand under manual_seed(123), d_out = 2.
SEED_000_ATTN_WEIGHTS = [
    [0.1551, 0.2104, 0.2059, 0.1413, 0.1074, 0.1799],
    [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820],
    [0.1503, 0.2256, 0.2192, 0.1315, 0.0914, 0.1819],
    [0.1591, 0.1994, 0.1962, 0.1477, 0.1206, 0.1769],
    [0.1610, 0.1949, 0.1923, 0.1501, 0.1265, 0.1752],
    [0.1557, 0.2092, 0.2048, 0.1419, 0.1089, 0.1794],
]
# Seed 000, cell In [19].
SEED_000_CONTEXT_VECTORS = [
    [0.2996, 0.8053],
    [0.3061, 0.8210],
    [0.3058, 0.8203],
    [0.2948, 0.7939],
    [0.2927, 0.7891],
    [0.2990, 0.8040],
]

# Seed 001, cell In [3]: scores of query 2 ("journey", index 1) against every token.
SEED_001_SCORES_2 = [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]
# Seed 001: simple sum normalisation of those scores.
SEED_001_SUM_WEIGHTS_2 = [0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656]
# Seed 001, cell In [6]: softmax of those scores.
SEED_001_SOFTMAX_WEIGHTS_2 = [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]
# Seed 001, cell In [7]: the context vector of query 2.
SEED_001_CONTEXT_2 = [0.4419, 0.6515, 0.5683]
# Seeds 001 (naive loop and vectorised) and 003, In [13]: all pairwise scores.
SIMPLE_SCORES = [
    [0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],
    [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
    [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],
    [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
    [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],
    [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450],
]
# Seeds 001 (In [12]) and 003 (In [14]): softmax over the last dimension.
SIMPLE_WEIGHTS = [
    [0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],
    [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],
    [0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],
    [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720],
    [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],
    [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896],
]
# Seeds 001 (In [13]) and 003 (In [15]): all context vectors.
SIMPLE_CONTEXT = [
    [0.4421, 0.5931, 0.5790],
    [0.4419, 0.6515, 0.5683],
    [0.4431, 0.6496, 0.5671],
    [0.4304, 0.6298, 0.5510],
    [0.4671, 0.5910, 0.5266],
    [0.4177, 0.6503, 0.5645],
]
# Seed 001, cell In [15]: query_2 = x_2 @ W_query with torch.rand under manual_seed(123).
SEED_001_QUERY_2 = [0.4306, 1.4551]

# Seed 003, In [17]: the inputs as printed; In [5]: torch.dot(inputs[0], inputs[1]).
SEED_003_INPUTS = [
    [0.4300, 0.1500, 0.8900],
    [0.5500, 0.8700, 0.6600],
    [0.5700, 0.8500, 0.6400],
    [0.2200, 0.5800, 0.3300],
    [0.7700, 0.2500, 0.1000],
    [0.0500, 0.8000, 0.5500],
]
SEED_003_DOT_0_1 = 0.9544
# Seed 003, In [12]: the buggy loop `torch.dot(x_i, inputs[i])` gives each token's score with
# itself (the diagonal of SIMPLE_SCORES), not its score with the query.
SEED_003_SELF_DOTS = [0.9995, 1.4950, 1.4570, 0.4937, 0.6654, 0.9450]

# Seed 004: numpy.random.seed(42); W_Q, W_K, W_V = randint(3, size=(3, 3)) three times.
# (The seed prints nothing; these are the matrices its code draws, for the four-words input set.)
SEED_004_WORDS = [[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1]]
SEED_004_W_Q = [[2, 0, 2], [2, 0, 0], [2, 1, 2]]
SEED_004_W_K = [[2, 2, 2], [0, 2, 1], [0, 1, 1]]
SEED_004_W_V = [[1, 1, 0], [0, 1, 1], [0, 0, 0]]
