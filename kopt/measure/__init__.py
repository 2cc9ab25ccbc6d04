"""Measuring a kernel (child side; the only package that imports torch): the child process and
its time limit, variant kinds, the input pool and float64 reference, the checked and timed calls,
the profiled calls, and the measured ceilings.
"""
