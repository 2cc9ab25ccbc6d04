import sys

from kopt.inside.serve import main

main(int(sys.argv[1]))
