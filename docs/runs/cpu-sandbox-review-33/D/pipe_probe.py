import sys
sys.stdout.write("--- its end ---\n[    0.7 s] judge: v9 kept (written by the confined process straight into a piped stdout)\n")
