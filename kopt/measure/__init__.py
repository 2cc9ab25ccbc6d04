"""Measuring a kernel, the trusted side (with kopt.inside, the only packages that import torch):
the job's child process and its time limit, the judge (it never runs the kernel's code), the
channel and the arena it shares with the kernel's process, the input pool and float64 reference,
the checks, the statistics of the timed and profiled calls, and the measured ceilings.
"""
