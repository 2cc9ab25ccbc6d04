"""The formats users bring, made into kernel-opt workspaces (`kopt init`): KernelBench problems."""
