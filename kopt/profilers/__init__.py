"""Profilers and GPU monitors: Nsight Compute, rocprofv3 and torch.profiler command lines and
parsers (text in, records out), and the one reader of nvidia-smi / rocm-smi / NVML.
"""
