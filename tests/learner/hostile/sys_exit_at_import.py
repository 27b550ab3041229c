import sys

sys.exit(0)
